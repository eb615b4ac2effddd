package framework

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Factory builds a plugin from its arguments (JSON; nil when none).
type Factory func(args []byte) (Plugin, error)

// Registry maps plugin names to factories.
type Registry map[string]Factory

// Defaults are the plugins a profile starts from.
type Defaults struct {
	// Filter, Score and Select list plugin names in order.
	Filter, Score, Select []string
	// Replicas is the replicas plugin.
	Replicas string
	// Weights of score plugins (default 1).
	Weights map[string]int32
}

// External resolves a plugin that is not in the registry (a webhook,
// "webhook/<name>"); nil when there are none.
type External func(name string) (Plugin, error)

type weightedScore struct {
	plugin ScorePlugin
	batch  BatchScorePlugin
	weight int64
}

type filter struct {
	plugin FilterPlugin
	batch  BatchFilterPlugin
}

// serves reports whether pl serves extension point i (0 filter, 1 score,
// 2 select, 3 replicas): always, unless it is a PointsPlugin saying no.
func serves(pl Plugin, i int) bool {
	pp, ok := pl.(PointsPlugin)
	if !ok {
		return true
	}
	f, s, sel, r := pp.Points()
	return []bool{f, s, sel, r}[i]
}

// Profile is a composition of plugins that schedules units.
type Profile struct {
	// Name is the SchedulingProfile's name ("" for the default).
	Name string

	prepare  []PreparePlugin
	filters  []filter
	scores   []weightedScore
	selects  []SelectPlugin
	replicas ReplicasPlugin
	all      []Plugin
}

// Remote reports whether a plugin of the profile calls out (a webhook):
// its decisions may take as long as a network round trip.
func (p *Profile) Remote() bool {
	for _, pl := range p.all {
		if _, ok := pl.(PointsPlugin); ok {
			return true
		}
	}
	return false
}

// Close releases what the profile's plugins hold (a webhook's
// connections); call it when the profile is replaced. A profile may still
// finish decisions in flight.
func (p *Profile) Close() {
	for _, pl := range p.all {
		if c, ok := pl.(interface{ Close() }); ok {
			c.Close()
		}
	}
}

// Build composes a profile: the defaults, minus what spec disables ("*"
// clears an extension point), plus what it enables, with spec's plugin
// arguments. A nil spec gives the default profile.
func Build(name string, spec *v1alpha1.SchedulingProfileSpec, reg Registry, defaults Defaults, external External) (*Profile, error) {
	if spec == nil {
		spec = &v1alpha1.SchedulingProfileSpec{}
	}
	args := map[string][]byte{}
	for _, c := range spec.PluginConfig {
		args[c.Name] = c.Args.Raw
	}
	instances := map[string]Plugin{}
	get := func(n string) (Plugin, error) {
		if p, ok := instances[n]; ok {
			return p, nil
		}
		var p Plugin
		var err error
		if f, ok := reg[n]; ok {
			p, err = f(args[n])
		} else if external != nil {
			p, err = external(n)
		} else {
			err = fmt.Errorf("unknown plugin %q", n)
		}
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", n, err)
		}
		instances[n] = p
		return p, nil
	}
	type entry struct {
		name   string
		weight int32
	}
	compose := func(point string, base []string, set v1alpha1.PluginSet) []entry {
		disabled := map[string]bool{}
		for _, d := range set.Disabled {
			disabled[d.Name] = true
		}
		var out []entry
		if !disabled["*"] {
			for _, n := range base {
				if !disabled[n] {
					w := defaults.Weights[n]
					out = append(out, entry{name: n, weight: max(w, 1)})
				}
			}
		}
		for _, e := range set.Enabled {
			w := int32(1)
			if e.Weight != nil {
				w = *e.Weight
			} else if dw, ok := defaults.Weights[e.Name]; ok {
				w = dw
			}
			out = slices.DeleteFunc(out, func(x entry) bool { return x.name == e.Name }) // enabling again sets the weight
			out = append(out, entry{name: e.Name, weight: w})
		}
		return out
	}
	p := &Profile{Name: name}
	seen := map[string]bool{}
	addPrepare := func(pl Plugin) {
		if pp, ok := pl.(PreparePlugin); ok && !seen[pl.Name()] {
			seen[pl.Name()] = true
			p.prepare = append(p.prepare, pp)
		}
	}
	for _, e := range compose("filter", defaults.Filter, spec.Plugins.Filter) {
		pl, err := get(e.name)
		if err != nil {
			return nil, err
		}
		f := filter{}
		f.plugin, _ = pl.(FilterPlugin)
		f.batch, _ = pl.(BatchFilterPlugin)
		if f.plugin == nil && f.batch == nil || !serves(pl, 0) {
			return nil, fmt.Errorf("plugin %s has no filter extension point", e.name)
		}
		addPrepare(pl)
		p.filters = append(p.filters, f)
	}
	for _, e := range compose("score", defaults.Score, spec.Plugins.Score) {
		pl, err := get(e.name)
		if err != nil {
			return nil, err
		}
		s := weightedScore{weight: int64(e.weight)}
		s.plugin, _ = pl.(ScorePlugin)
		s.batch, _ = pl.(BatchScorePlugin)
		if s.plugin == nil && s.batch == nil || !serves(pl, 1) {
			return nil, fmt.Errorf("plugin %s has no score extension point", e.name)
		}
		addPrepare(pl)
		p.scores = append(p.scores, s)
	}
	for _, e := range compose("select", defaults.Select, spec.Plugins.Select) {
		pl, err := get(e.name)
		if err != nil {
			return nil, err
		}
		s, ok := pl.(SelectPlugin)
		if !ok || !serves(pl, 2) {
			return nil, fmt.Errorf("plugin %s has no select extension point", e.name)
		}
		addPrepare(pl)
		p.selects = append(p.selects, s)
	}
	base := []string{}
	if defaults.Replicas != "" {
		base = []string{defaults.Replicas}
	}
	reps := compose("replicas", base, spec.Plugins.Replicas)
	if len(reps) == 0 {
		return nil, fmt.Errorf("the profile has no replicas plugin")
	}
	pl, err := get(reps[len(reps)-1].name)
	if err != nil {
		return nil, err
	}
	r, ok := pl.(ReplicasPlugin)
	if !ok || !serves(pl, 3) {
		return nil, fmt.Errorf("plugin %s has no replicas extension point", reps[len(reps)-1].name)
	}
	addPrepare(pl)
	p.replicas = r
	for n := range args {
		if _, used := instances[n]; !used {
			return nil, fmt.Errorf("pluginConfig for %s, which the profile does not use", n)
		}
	}
	for _, pl := range instances {
		p.all = append(p.all, pl)
	}
	return p, nil
}

// NoArgs is the argument check of plugins that take none: absent, null or
// an empty JSON object are accepted; anything else is an error naming the
// first field given.
func NoArgs(args []byte) error {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args, &fields); err != nil {
		return fmt.Errorf("arguments must be a JSON object: %w", err)
	}
	if len(fields) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(fields))
	return fmt.Errorf("takes no arguments, got %q", keys[0])
}
