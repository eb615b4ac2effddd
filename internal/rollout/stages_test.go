package rollout

import (
	"testing"
	"time"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// inStage puts m in stage s.
func inStage(m Member, s int) Member {
	m.Stage = s
	return m
}

func TestStagedPlan(t *testing.T) {
	budget := Budget{Surge: 3, Unavailable: 3}
	canary := []Stage{{Name: "canary", After: v1alpha1.GateApproval}, {Name: "rest"}}
	paused := []Stage{{Name: "canary", After: v1alpha1.GatePause, Pause: time.Minute}, {Name: "rest"}}
	guarded := []Stage{{Name: "canary", After: v1alpha1.GateContinue, MinAvailablePercent: 80}, {Name: "rest"}}
	unavailable := func(m Member, n int32) Member { m.Available -= n; return m }
	stuck := func(m Member) Member { m.Stuck = true; return m }
	tests := []struct {
		name      string
		in        Input
		want      string
		stage     string
		gate      v1alpha1.StageGate
		halted    bool
		pauseLeft time.Duration
	}{{
		name: "only the first stage is admitted",
		in: Input{Revision: "r2", Budget: budget, Stages: canary, Previous: plan("r1", budget, "a=Done", "b=Done", "c=Done"),
			Members: []Member{inStage(held("a", 10, "r2"), 0), inStage(held("b", 10, "r2"), 1), inStage(held("c", 10, "r2"), 1)}},
		want: "a=Rolling(3/3) b=Waiting c=Waiting", stage: "canary",
	}, {
		name: "the canary done: the rollout waits for approval",
		in: Input{Revision: "r2", Budget: budget, Stages: canary, Previous: plan("r2", budget, "a=Rolling(3/3)", "b=Waiting", "c=Waiting"),
			Members: []Member{inStage(steady("a", 10, "r2"), 0), inStage(held("b", 10, "r2"), 1), inStage(held("c", 10, "r2"), 1)}},
		want: "a=Done(3/3) b=Waiting c=Waiting", stage: "canary", gate: v1alpha1.GateApproval,
	}, {
		name: "approved: the rest roll",
		in: Input{Revision: "r2", Budget: budget, Stages: canary, Approved: 1, Previous: plan("r2", budget, "a=Done", "b=Waiting", "c=Waiting"),
			Members: []Member{inStage(steady("a", 10, "r2"), 0), inStage(held("b", 10, "r2"), 1), inStage(held("c", 10, "r2"), 1)}},
		want: "a=Done b=Rolling(2/2) c=Rolling(1/1)", stage: "rest",
	}, {
		name: "a reached stage needs no approval any more",
		in: Input{Revision: "r2", Budget: budget, Stages: canary, Previous: func() *v1alpha1.RolloutStatus {
			p := plan("r2", budget, "a=Done", "b=Rolling(2/2)", "c=Waiting")
			p.Reached = "rest"
			return p
		}(),
			Members: []Member{inStage(steady("a", 10, "r2"), 0), inStage(held("b", 10, "r2"), 1), inStage(held("c", 10, "r2"), 1)}},
		want: "a=Done b=Rolling(2/2) c=Rolling(1/1)", stage: "rest",
	}, {
		name: "a pause gate holds until its time",
		in: Input{Revision: "r2", Budget: budget, Stages: paused, Now: t0, Previous: func() *v1alpha1.RolloutStatus {
			p := plan("r2", budget, "a=Done", "b=Waiting")
			p.Clusters[0].Since.Time = t0.Add(-20 * time.Second)
			return p
		}(), Members: []Member{inStage(steady("a", 10, "r2"), 0), inStage(held("b", 10, "r2"), 1)}},
		want: "a=Done b=Waiting", stage: "canary", gate: v1alpha1.GatePause, pauseLeft: 40 * time.Second,
	}, {
		name: "a stage with nothing to roll keeps the canary's approval gate",
		in: Input{Revision: "r2", Budget: budget, Stages: []Stage{{Name: "canary", After: v1alpha1.GateApproval}, {Name: "europe"}, {Name: "rest"}},
			Previous: plan("r2", budget, "a=Rolling(3/3)", "c=Waiting"),
			Members:  []Member{inStage(steady("a", 10, "r2"), 0), inStage(held("c", 10, "r2"), 2)}},
		want: "a=Done(3/3) c=Waiting", stage: "canary", gate: v1alpha1.GateApproval,
	}, {
		name: "an empty stage's pause counts from the stage before it",
		in: Input{Revision: "r2", Budget: budget, Now: t0,
			Stages: []Stage{{Name: "canary"}, {Name: "europe", After: v1alpha1.GatePause, Pause: time.Minute}, {Name: "rest"}},
			Previous: func() *v1alpha1.RolloutStatus {
				p := plan("r2", budget, "a=Done", "c=Waiting")
				p.Reached = "canary"
				p.Clusters[0].Since.Time = t0.Add(-20 * time.Second)
				return p
			}(), Members: []Member{inStage(steady("a", 10, "r2"), 0), inStage(held("c", 10, "r2"), 2)}},
		want: "a=Done c=Waiting", stage: "europe", gate: v1alpha1.GatePause, pauseLeft: 40 * time.Second,
	}, {
		name: "approved through the canary: the stage after the empty one rolls",
		in: Input{Revision: "r2", Budget: budget, Approved: 1, Stages: []Stage{{Name: "canary", After: v1alpha1.GateApproval}, {Name: "europe"}, {Name: "rest"}},
			Previous: plan("r2", budget, "a=Done", "c=Waiting"),
			Members:  []Member{inStage(steady("a", 10, "r2"), 0), inStage(held("c", 10, "r2"), 2)}},
		want: "a=Done c=Rolling(3/3)", stage: "rest",
	}, {
		name: "a fix is not halted by the copy stuck on the revision it replaces",
		in: Input{Revision: "r3", Budget: budget, Stages: canary, Previous: func() *v1alpha1.RolloutStatus {
			p := plan("r2", budget, "a=Rolling(3/3)", "b=Waiting")
			p.Halted = "stage canary: the copy in a exceeded its progress deadline"
			return p
		}(), Members: []Member{inStage(stuck(held("a", 10, "r2")), 0), inStage(held("b", 10, "r2"), 1)}},
		want: "a=Rolling(3/3) b=Waiting", stage: "canary",
	}, {
		name: "an abort rolls back a canary that fell below its minimum on the aborted revision",
		in: Input{Revision: "r1", Budget: budget, Stages: guarded, Previous: plan("r2", budget, "a=Done", "b=Waiting"),
			Members: []Member{inStage(unavailable(steady("a", 10, "r2"), 5), 0), inStage(held("b", 10, "r2"), 1)}},
		want: "a=Rolling(3/0) b=Waiting", stage: "canary",
	}, {
		name: "a stage's copies of the revision before count as available",
		in: Input{Revision: "r2", Budget: Budget{Surge: 0, Unavailable: 1}, Stages: guarded, Previous: plan("r2", Budget{Surge: 0, Unavailable: 1}, "a=Rolling(0/1)", "b=Waiting", "c=Waiting"),
			Members: []Member{inStage(unavailable(held("a", 4, "r2"), 1), 0), inStage(held("b", 4, "r1"), 0), inStage(held("c", 4, "r1"), 1)}},
		want: "a=Rolling(0/1) b=Waiting c=Waiting", stage: "canary",
	}, {
		name: "resumed: the pause ends early",
		in: Input{Revision: "r2", Budget: budget, Stages: paused, Resumed: 1, Now: t0, Previous: plan("r2", budget, "a=Done", "b=Waiting"),
			Members: []Member{inStage(steady("a", 10, "r2"), 0), inStage(held("b", 10, "r2"), 1)}},
		want: "a=Done b=Rolling(3/3)", stage: "rest",
	}, {
		name: "a stuck canary halts the rollout",
		in: Input{Revision: "r2", Budget: budget, Stages: canary, Approved: 1, Previous: plan("r2", budget, "a=Rolling(3/3)", "b=Waiting"),
			Members: []Member{inStage(stuck(unavailable(held("a", 10, "r2"), 3)), 0), inStage(held("b", 10, "r2"), 1)}},
		want: "a=Rolling(3/3) b=Waiting", stage: "canary", halted: true,
	}, {
		name: "availability below the stage's minimum halts",
		in: Input{Revision: "r2", Budget: budget, Stages: guarded, Previous: plan("r2", budget, "a=Rolling(3/3)", "b=Waiting"),
			Members: []Member{inStage(unavailable(held("a", 10, "r2"), 3), 0), inStage(held("b", 10, "r2"), 1)}},
		want: "a=Rolling(3/3) b=Waiting", stage: "canary", halted: true,
	}, {
		name: "a halt stays for the revision even when the canary recovers",
		in: Input{Revision: "r2", Budget: budget, Stages: guarded, Previous: func() *v1alpha1.RolloutStatus {
			p := plan("r2", budget, "a=Done", "b=Waiting")
			p.Halted, p.Stage = "stage canary: 7 of 10 replicas available", "canary"
			return p
		}(), Members: []Member{inStage(steady("a", 10, "r2"), 0), inStage(held("b", 10, "r2"), 1)}},
		want: "a=Done b=Waiting", stage: "rest", halted: true,
	}, {
		name: "a Done cluster of a gated stage does not open the gate",
		in: Input{Revision: "r2", Budget: budget, Stages: []Stage{{Name: "canary", After: v1alpha1.GateApproval}, {Name: "rest"}}, Previous: plan("r2", budget, "a=Done", "c=Done", "d=Waiting"),
			Members: []Member{inStage(steady("a", 10, "r2"), 0), inStage(steady("c", 0, "r2"), 1), inStage(held("d", 10, "r2"), 1)}},
		want: "a=Done c=Done d=Waiting", stage: "canary", gate: v1alpha1.GateApproval,
	}, {
		name: "resuming the canary does not lift a later stage's halt",
		in: Input{Revision: "r2", Budget: budget, Stages: []Stage{{Name: "canary"}, {Name: "eu", MinAvailablePercent: 90}, {Name: "rest"}}, Resumed: 1,
			Previous: func() *v1alpha1.RolloutStatus {
				p := plan("r2", budget, "a=Done", "b=Rolling(3/3)", "c=Waiting")
				p.Reached = "eu"
				return p
			}(),
			Members: []Member{inStage(steady("a", 10, "r2"), 0), inStage(unavailable(held("b", 10, "r2"), 3), 1), inStage(held("c", 10, "r2"), 2)}},
		want: "a=Done b=Rolling(3/3) c=Waiting", stage: "eu", halted: true,
	}, {
		name: "resumed: the halt is lifted",
		in: Input{Revision: "r2", Budget: budget, Stages: guarded, Resumed: 1, Previous: func() *v1alpha1.RolloutStatus {
			p := plan("r2", budget, "a=Done", "b=Waiting")
			p.Halted = "stage canary: 7 of 10 replicas available"
			return p
		}(), Members: []Member{inStage(steady("a", 10, "r2"), 0), inStage(held("b", 10, "r2"), 1)}},
		want: "a=Done b=Rolling(3/3)", stage: "rest",
	}, {
		name: "a new revision starts without the old halt",
		in: Input{Revision: "r3", Budget: budget, Stages: guarded, Previous: func() *v1alpha1.RolloutStatus {
			p := plan("r2", budget, "a=Done", "b=Waiting")
			p.Halted = "stage canary: 7 of 10 replicas available"
			return p
		}(), Members: []Member{inStage(held("a", 10, "r3"), 0), inStage(held("b", 10, "r3"), 1)}},
		want: "a=Rolling(3/3) b=Waiting", stage: "canary",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.in)
			if d := describe(got); d != tt.want {
				t.Errorf("Plan = %s, want %s", d, tt.want)
			}
			if got.Stage != tt.stage || got.Gate != tt.gate || (got.Halted != "") != tt.halted {
				t.Errorf("stage %q gate %q halted %q; want stage %q gate %q halted %v", got.Stage, got.Gate, got.Halted, tt.stage, tt.gate, tt.halted)
			}
			if tt.pauseLeft > 0 && (got.PausedUntil == nil || got.PausedUntil.Sub(tt.in.Now) != tt.pauseLeft) {
				t.Errorf("paused until %v, want %s after now", got.PausedUntil, tt.pauseLeft)
			}
			for _, c := range got.Clusters {
				if c.Stage == "" {
					t.Errorf("%s has no stage", c.Cluster)
				}
			}
		})
	}
}
