package pull

import (
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestAutoscaleOnly(t *testing.T) {
	withReport := func(i intent, used int64) intent {
		u := i.u.DeepCopy()
		st := u.Object["status"].(map[string]any)
		st["autoscale"] = map[string]any{"time": "2026-11-26T00:00:00Z", "usage": []any{map[string]any{"resource": "cpu", "ready": int64(2), "used": used}}}
		return intent{u}
	}
	base := reportedIntent(string(v1alpha1.IntentApplied), 3, 2, "web")
	moreReady := reportedIntent(string(v1alpha1.IntentApplied), 3, 3, "web")
	newGen := reportedIntent(string(v1alpha1.IntentApplied), 3, 2, "web")
	newGen.u.SetGeneration(2)
	tests := []struct {
		name     string
		old, cur intent
		want     bool
	}{
		{"a first report", base, withReport(base, 100), true},
		{"a new usage", withReport(base, 100), withReport(base, 300), true},
		{"nothing changed", withReport(base, 100), withReport(base, 100), false},
		{"the copy's status changed too", withReport(base, 100), withReport(moreReady, 300), false},
		{"the copy's status alone", withReport(base, 100), withReport(moreReady, 100), false},
		{"the spec changed", withReport(base, 100), withReport(newGen, 300), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := autoscaleOnly(tt.old, tt.cur); got != tt.want {
				t.Errorf("autoscaleOnly = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIntentAutoscaleRoundTrip(t *testing.T) {
	i := reportedIntent(string(v1alpha1.IntentApplied), 1, 1, "web")
	if i.autoscale() != nil || i.autoscaleStatus() != nil {
		t.Fatal("an intent without autoscale reads as having it")
	}
	i.u.Object["spec"].(map[string]any)["autoscale"] = map[string]any{"remove": []any{"old"}}
	i.u.Object["status"].(map[string]any)["autoscale"] = map[string]any{"time": "2026-11-26T00:00:00Z",
		"autoscalers": []any{map[string]any{"name": "mine", "minReplicas": int64(1), "maxReplicas": int64(4)}}}
	if a := i.autoscale(); a == nil || len(a.Remove) != 1 || a.Remove[0] != "old" {
		t.Errorf("spec.autoscale = %+v", a)
	}
	if st := i.autoscaleStatus(); st == nil || len(st.Autoscalers) != 1 || st.Autoscalers[0].MaxReplicas != 4 {
		t.Errorf("status.autoscale = %+v", st)
	}
}

// TestAutoscalePatchClearsRemove: once the agent deleted the last HPA the
// hub asked it to, the patch empties spec.autoscale.remove (a merge patch
// of {} would keep the names, and a later member HPA of the same name
// would be deleted); nil clears spec.autoscale.
func TestAutoscalePatchClearsRemove(t *testing.T) {
	intent := []byte(`{"spec":{"hash":"h","autoscale":{"remove":["a","b"]}}}`)
	tests := []struct {
		name string
		want *v1alpha1.IntentAutoscale
		out  string
	}{
		{"one left", &v1alpha1.IntentAutoscale{Remove: []string{"b"}}, `{"spec":{"autoscale":{"remove":["b"]},"hash":"h"}}`},
		{"none left", &v1alpha1.IntentAutoscale{}, `{"spec":{"autoscale":{},"hash":"h"}}`},
		{"cleared", nil, `{"spec":{"hash":"h"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			patch, err := autoscalePatch(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := jsonpatch.MergePatch(intent, patch)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.out {
				t.Errorf("intent after the patch %s = %s, want %s", patch, got, tc.out)
			}
		})
	}
}
