package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Stage is one stage of a staged rollout (v1alpha1.RolloutStage with its
// clusters resolved into Member.Stage).
type Stage struct {
	// Name is the stage's name.
	Name string
	// After is the gate before the next stage.
	After v1alpha1.StageGate
	// Pause is the wait of a Pause gate.
	Pause time.Duration
	// MinAvailablePercent halts the rollout below this availability of
	// the stage (0: never on availability).
	MinAvailablePercent int32
}

// staged narrows the admissible clusters to the current stage's (the
// first with a cluster not Done) once the previous stage's gate is open
// and the rollout is not halted, recording the stage, the gate, the halt
// and the stage reached in out. It returns the admissible indexes.
func staged(in Input, out *v1alpha1.RolloutStatus, waiting []int) []int {
	current := len(in.Stages)
	for i, c := range out.Clusters {
		if c.State != v1alpha1.RolloutDone && !in.Members[i].Leaving {
			current = min(current, in.Members[i].Stage)
		}
	}
	if current == len(in.Stages) {
		return nil // every stage is done
	}
	out.Stage = in.Stages[current].Name
	if halt := halted(in, current); halt != "" {
		out.Halted = halt
		return nil
	}
	reached := slices.IndexFunc(in.Stages, func(s Stage) bool { return s.Name == out.Reached })
	// Every gate between the stage last let in and the current one must
	// be open, not only the current one's: stages in between that have
	// nothing to roll (no placed cluster, or all done at once) do not
	// take their gates, or an earlier one's, away.
	for g := max(reached, 0); g < current; g++ {
		gate := in.Stages[g]
		switch gate.After {
		case v1alpha1.GateApproval:
			if in.Approved <= g {
				out.Stage, out.Gate = gate.Name, v1alpha1.GateApproval
				return nil
			}
		case v1alpha1.GatePause:
			until := doneAt(in, out, g).Add(gate.Pause)
			if in.Resumed <= g && in.Now.Before(until) {
				out.Stage, out.Gate, out.PausedUntil = gate.Name, v1alpha1.GatePause, &metav1.Time{Time: until}
				return nil
			}
		}
	}
	if current > reached && !in.Frozen && !in.Suspended {
		out.Reached = in.Stages[current].Name
	}
	var admissible []int
	for _, i := range waiting {
		if in.Members[i].Stage == current {
			admissible = append(admissible, i)
		}
	}
	return admissible
}

// doneAt is when the last cluster of a stage, or of the stages before
// it, became Done (a stage without clusters is done when those before
// it are).
func doneAt(in Input, out *v1alpha1.RolloutStatus, stage int) time.Time {
	var at time.Time
	for i, c := range out.Clusters {
		if in.Members[i].Stage <= stage && c.Since.After(at) {
			at = c.Since.Time
		}
	}
	return at
}

// halted says why the rollout of the current stage (and those before,
// whose clusters are all Done) must stop admitting: a halt recorded for
// this revision stays until resumed; a copy of this revision that
// exceeded its progress deadline, or a stage whose availability fell
// below its minAvailablePercent (copies of another revision counting as
// available), halts it. Resuming through a stage lifts the halts
// of that stage and those before it, not later ones.
func halted(in Input, current int) string {
	if in.Resumed > current {
		return ""
	}
	if p := in.Previous; p != nil && p.Revision == in.Revision && p.Halted != "" &&
		slices.IndexFunc(in.Stages, func(s Stage) bool { return s.Name == p.Stage }) >= in.Resumed {
		return p.Halted
	}
	var why []string
	for s := in.Resumed; s <= current; s++ {
		var replicas, available int32
		for _, m := range in.Members {
			if m.Stage != s || !m.Usable || m.Leaving {
				continue
			}
			// A copy of another revision (the one a fix or an abort
			// replaces, not rolled yet) says nothing about this one: it
			// is not stuck on it, and it counts as fully available, or
			// its trouble would halt the fix, or hold back the very
			// clusters an abort must roll back.
			ours := m.Revision == in.Revision
			if m.Stuck && m.Observed && ours {
				why = append(why, fmt.Sprintf("stage %s: the copy in %s exceeded its progress deadline", in.Stages[s].Name, m.Cluster))
			}
			if m.HasCopy {
				replicas += m.SpecReplicas
				if ours {
					available += min(m.Available, m.SpecReplicas)
				} else {
					available += m.SpecReplicas
				}
			}
		}
		if p := in.Stages[s].MinAvailablePercent; p > 0 && replicas > 0 && int64(available)*100 < int64(p)*int64(replicas) {
			why = append(why, fmt.Sprintf("stage %s: %d of %d replicas available, below its minAvailablePercent %d", in.Stages[s].Name, available, replicas, p))
		}
	}
	return strings.Join(why, "; ")
}
