package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"
)

// report is everything a run measured; it is written as JSON.
type report struct {
	Date      time.Time   `json:"date"`
	GoVersion string      `json:"goVersion"`
	Revision  string      `json:"revision,omitempty"`
	Machine   machine     `json:"machine"`
	Settings  settings    `json:"settings"`
	Scenarios []*scenario `json:"scenarios"`
	// Seconds is the wall time of the whole run.
	Seconds float64 `json:"seconds"`
	// Passed is false when a scenario failed or missed a target.
	Passed bool `json:"passed"`
}

// scenario is one scenario's outcome.
type scenario struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	// Skipped says why the scenario did not run.
	Skipped string `json:"skipped,omitempty"`
	// Error says why it failed.
	Error   string         `json:"error,omitempty"`
	Seconds float64        `json:"seconds"`
	Metrics []metric       `json:"metrics,omitempty"`
	Details map[string]any `json:"details,omitempty"`
	Notes   []string       `json:"notes,omitempty"`
	// failed is set when a metric missed its target.
	failed bool
	// details is Details under construction.
	details map[string]any
}

// metric is one measured number.
type metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Unit is s, obj/s, MiB, KiB, B, ratio or count.
	Unit   string `json:"unit"`
	Target string `json:"target,omitempty"`
	// Met says whether the value met Target (absent without a target).
	Met *bool `json:"met,omitempty"`
}

func newReport(opts options) *report {
	return &report{
		Date:      time.Now().UTC(),
		GoVersion: goVersion(),
		Revision:  revision(),
		Machine:   readMachine(),
		Settings:  baseSettings(opts),
	}
}

// run runs one scenario unless skip gives a reason not to, records its
// outcome and reports whether it succeeded.
func (r *report) run(name, title, skip string, fn func(*scenario) error) bool {
	s := &scenario{Name: name, Title: title, details: map[string]any{}}
	r.Scenarios = append(r.Scenarios, s)
	if skip != "" {
		s.Skipped = skip
		logf("%s: skipped: %s", title, skip)
		return false
	}
	logf("%s: start", title)
	begin := time.Now()
	err := fn(s)
	s.Seconds = time.Since(begin).Seconds()
	if len(s.details) > 0 {
		s.Details = s.details
	}
	if err != nil {
		s.Error = err.Error()
		logf("%s: FAILED after %.1fs: %v", title, s.Seconds, err)
		return false
	}
	logf("%s: done in %.1fs", title, s.Seconds)
	return true
}

// add records a metric; target is empty when there is none.
func (s *scenario) add(name string, value float64, unit, target string) {
	s.Metrics = append(s.Metrics, metric{Name: name, Value: value, Unit: unit, Target: target})
}

// check records whether the last metric met its target.
func (s *scenario) check(met bool) {
	s.Metrics[len(s.Metrics)-1].Met = &met
	if !met {
		s.failed = true
	}
}

// goal records whether the last metric met its performance goal. Unlike
// check, a missed goal does not fail the run: it is reported (MISSED), as
// where the controllers stand.
func (s *scenario) goal(met bool) {
	s.Metrics[len(s.Metrics)-1].Met = &met
}

// addSummary records the percentiles of a latency distribution.
func (s *scenario) addSummary(name string, ds []time.Duration) {
	sum := summarize(ds)
	s.add(name+" p50", sum.P50, "s", "")
	s.add(name+" p95", sum.P95, "s", "")
	s.add(name+" p99", sum.P99, "s", "")
	s.add(name+" max", sum.Max, "s", "")
	s.details[strings.ReplaceAll(name, " ", "_")] = sum
}

// addControllers records the controllers' work during the scenario: the
// propagate reconciles (also per FederatedObject) in the table, every
// controller's counters in the details.
func (s *scenario) addControllers(work map[string]controllerStats, federatedObjects int) {
	p := work["propagate"]
	s.add("propagate reconciles", float64(p.total()), "count", "")
	if federatedObjects > 0 {
		s.add("propagate reconciles per FederatedObject", float64(p.total())/float64(federatedObjects), "ratio", "")
	}
	s.add("propagate time in reconciles", p.Seconds, "s", "")
	s.details["controllers"] = work
}

// note adds an explanation to the scenario.
func (s *scenario) note(format string, args ...any) {
	s.Notes = append(s.Notes, fmt.Sprintf(format, args...))
}

// finish computes the totals.
func (r *report) finish() {
	r.Seconds = time.Since(start).Seconds()
	r.Passed = true
	for _, s := range r.Scenarios {
		if s.Error != "" || s.failed {
			r.Passed = false
		}
	}
}

// printTable writes the human-readable summary.
func (r *report) printTable(w io.Writer) {
	st := r.Settings
	fmt.Fprintf(w, "\nFlotilla benchmark, %s, %d cpu (%s), %s RAM, %s\n", r.Date.Format("2006-01-02 15:04 MST"),
		r.Machine.CPUs, r.Machine.CPUModel, formatBytes(float64(r.Machine.MemoryBytes)), r.GoVersion)
	fmt.Fprintf(w, "N=%d workloads, M=%d %s members; harness clients QPS %g burst %d, %d goroutines; controller-manager %s\n\n",
		st.Workloads, st.Members, st.MemberMode, st.ClientQPS, st.ClientBurst, st.Workers, st.ControllerManager.summary())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tMETRIC\tVALUE\tTARGET")
	var notes []string
	for _, s := range r.Scenarios {
		switch {
		case s.Skipped != "":
			fmt.Fprintf(tw, "%s\t(skipped)\t-\t\n", s.Name)
			notes = append(notes, s.Name+": skipped: "+s.Skipped)
		case s.Error != "":
			fmt.Fprintf(tw, "%s\t(FAILED)\t-\t\n", s.Name)
			notes = append(notes, s.Name+": FAILED: "+firstLine(s.Error))
		}
		for _, m := range s.Metrics {
			target := m.Target
			if m.Met != nil && !*m.Met {
				target += "  MISSED"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, m.Name, formatValue(m.Value, m.Unit), target)
		}
		for _, n := range s.Notes {
			notes = append(notes, s.Name+": "+n)
		}
	}
	tw.Flush()
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range notes {
			fmt.Fprintln(w, "  - "+n)
		}
	}
	fmt.Fprintf(w, "\nTotal %.0fs. ", r.Seconds)
	missed := 0
	for _, s := range r.Scenarios {
		for _, m := range s.Metrics {
			if m.Met != nil && !*m.Met {
				missed++
			}
		}
	}
	switch {
	case !r.Passed:
		fmt.Fprintln(w, "Some scenario FAILED or missed a required value.")
	case missed > 0:
		fmt.Fprintf(w, "Every scenario that ran succeeded; %d performance goal(s) MISSED (see TARGET).\n", missed)
	default:
		fmt.Fprintln(w, "Every scenario that ran succeeded and met its targets.")
	}
}

// writeJSON writes the report to path.
func (r *report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// formatValue renders a metric value in its unit.
func formatValue(v float64, unit string) string {
	switch unit {
	case "s":
		if v < 1 {
			return fmt.Sprintf("%.0f ms", v*1000)
		}
		return fmt.Sprintf("%.2f s", v)
	case "obj/s":
		return fmt.Sprintf("%.0f obj/s", v)
	case "MiB":
		return fmt.Sprintf("%.1f MiB", v)
	case "KiB":
		return fmt.Sprintf("%.1f KiB", v)
	case "B":
		return formatBytes(v)
	case "ratio":
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// formatBytes renders a byte count with a binary unit.
func formatBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for ; (v >= 1024 || v <= -1024) && i < len(units)-1; i++ {
		v /= 1024
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", v)
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 300 {
		line = line[:300] + "..."
	}
	return line
}

// revision is the VCS revision the harness was built from, if recorded.
func revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" && dirty {
		rev += "+dirty"
	}
	return rev
}
