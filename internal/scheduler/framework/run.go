package framework

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Result is a scheduling decision and its explanation.
type Result struct {
	// Placement is the chosen clusters in name order (with replicas for a
	// Divide unit). Empty when nothing fits.
	Placement []v1alpha1.ClusterPlacement
	// Feasible is how many clusters passed the filters.
	Feasible int
	// Total is how many clusters were considered.
	Total int
	// Excluded maps each filtered-out cluster to its reason.
	Excluded map[string]string
	// Message explains the decision, e.g. "0/5 clusters available: 2
	// untolerated taint flotilla.io/unreachable, 3 do not serve
	// apps.kruise.io/v1alpha1 CloneSet".
	Message string
}

// Schedule places u on clusters. A plugin Error fails the whole decision
// (the caller keeps the placement in force).
func (p *Profile) Schedule(ctx context.Context, u *Unit, clusters []*v1alpha1.MemberCluster) (*Result, error) {
	res := &Result{Total: len(clusters), Excluded: map[string]string{}}
	state := CycleState{}
	for _, pp := range p.prepare {
		if s := pp.Prepare(ctx, state, u, clusters); !s.IsSuccess() {
			return nil, fmt.Errorf("%s: %s", pp.Name(), s.Reason)
		}
	}
	feasible := make([]*v1alpha1.MemberCluster, 0, len(clusters))
	for _, c := range clusters {
		feasible = append(feasible, c)
	}
	for _, f := range p.filters {
		if len(feasible) == 0 {
			break
		}
		if f.batch != nil {
			statuses, err := f.batch.FilterAll(ctx, u, feasible)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.batch.Name(), err)
			}
			if len(statuses) != len(feasible) {
				return nil, fmt.Errorf("%s: %d verdicts for %d clusters", f.batch.Name(), len(statuses), len(feasible))
			}
			kept := feasible[:0]
			for i, c := range feasible {
				switch s := statuses[i]; {
				case s.IsSuccess():
					kept = append(kept, c)
				case s.Code == Error:
					return nil, fmt.Errorf("%s: %s", f.batch.Name(), s.Reason)
				default:
					res.Excluded[c.Name] = s.Reason
				}
			}
			feasible = kept
			continue
		}
		kept := feasible[:0]
		for _, c := range feasible {
			s := f.plugin.Filter(ctx, state, u, c)
			switch {
			case s.IsSuccess():
				kept = append(kept, c)
			case s.Code == Error:
				return nil, fmt.Errorf("%s: %s", f.plugin.Name(), s.Reason)
			default:
				res.Excluded[c.Name] = s.Reason
			}
		}
		feasible = kept
	}
	res.Feasible = len(feasible)
	if len(feasible) == 0 {
		res.Message = fmt.Sprintf("0/%d clusters available%s", res.Total, reasons(res.Excluded, ": "))
		return res, nil
	}
	ranked := make([]ScoredCluster, len(feasible))
	for i, c := range feasible {
		ranked[i].Cluster = c
	}
	for _, s := range p.scores {
		if s.batch != nil {
			scores, err := s.batch.ScoreAll(ctx, u, feasible)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.batch.Name(), err)
			}
			if len(scores) != len(feasible) {
				return nil, fmt.Errorf("%s: %d scores for %d clusters", s.batch.Name(), len(scores), len(feasible))
			}
			for i := range ranked {
				ranked[i].Score += s.weight * clamp(scores[i])
			}
			continue
		}
		for i := range ranked {
			v, st := s.plugin.Score(ctx, state, u, ranked[i].Cluster)
			if !st.IsSuccess() {
				return nil, fmt.Errorf("%s: %s", s.plugin.Name(), st.Reason)
			}
			ranked[i].Score += s.weight * clamp(v)
		}
	}
	sortRanked(ranked, u.Key)
	chosen := ranked
	for _, s := range p.selects {
		out, st := s.Select(ctx, state, u, chosen)
		switch {
		case st.IsSuccess():
			chosen = out
		case st.Code == Error:
			return nil, fmt.Errorf("%s: %s", s.Name(), st.Reason)
		default:
			res.Message = fmt.Sprintf("0/%d clusters chosen: %s%s", res.Total, st.Reason, reasons(res.Excluded, "; excluded: "))
			return res, nil
		}
	}
	placement, st := p.replicas.Replicas(ctx, state, u, chosen)
	switch {
	case st.IsSuccess():
	case st.Code == Error:
		return nil, fmt.Errorf("%s: %s", p.replicas.Name(), st.Reason)
	default:
		res.Message = fmt.Sprintf("no replica plan: %s", st.Reason)
		return res, nil
	}
	sort.Slice(placement, func(i, j int) bool { return placement[i].Cluster < placement[j].Cluster })
	res.Placement = placement
	res.Message = fmt.Sprintf("%d/%d clusters%s", len(placement), res.Total, reasons(res.Excluded, "; excluded: "))
	if notes := Notes(state); len(notes) > 0 {
		res.Message += "; " + strings.Join(notes, "; ")
	}
	return res, nil
}

// notesKey is where plugins leave notes for the decision's message.
const notesKey = "framework/notes"

// Note adds a sentence to the message of a decision that succeeds ("groups
// eu-1 (cost 3) chosen for 12 replicas").
func Note(state CycleState, format string, args ...any) {
	notes, _ := state[notesKey].([]string)
	state[notesKey] = append(notes, fmt.Sprintf(format, args...))
}

// Notes returns the notes plugins left in state.
func Notes(state CycleState) []string {
	notes, _ := state[notesKey].([]string)
	return notes
}

func clamp(v int64) int64 { return min(max(v, 0), MaxScore) }

// sortRanked orders best score first; equal scores by a hash of the key and
// the cluster name, so ties do not always favour the same names.
func sortRanked(ranked []ScoredCluster, key string) {
	type entry struct {
		c    ScoredCluster
		hash uint64
	}
	seed := fnv.New64a()
	seed.Write([]byte(key))
	base := seed.Sum64()
	entries := make([]entry, len(ranked))
	for i, r := range ranked {
		h := base
		for j := 0; j < len(r.Cluster.Name); j++ { // FNV-1a continued over the name
			h ^= uint64(r.Cluster.Name[j])
			h *= 1099511628211
		}
		entries[i] = entry{c: r, hash: h}
	}
	slices.SortFunc(entries, func(a, b entry) int {
		switch {
		case a.c.Score != b.c.Score:
			return cmp.Compare(b.c.Score, a.c.Score)
		case a.hash != b.hash:
			return cmp.Compare(a.hash, b.hash)
		}
		return strings.Compare(a.c.Cluster.Name, b.c.Cluster.Name)
	})
	for i := range entries {
		ranked[i] = entries[i].c
	}
}

// reasons summarises excluded clusters as "2 untolerated taint x, 1 ...",
// most frequent first, after prefix; "" when none.
func reasons(excluded map[string]string, prefix string) string {
	if len(excluded) == 0 {
		return ""
	}
	count := map[string]int{}
	for _, r := range excluded {
		count[r]++
	}
	keys := make([]string, 0, len(count))
	for r := range count {
		keys = append(keys, r)
	}
	sort.Slice(keys, func(i, j int) bool {
		if count[keys[i]] != count[keys[j]] {
			return count[keys[i]] > count[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, r := range keys {
		parts[i] = fmt.Sprintf("%d %s", count[r], r)
	}
	return prefix + strings.Join(parts, ", ")
}
