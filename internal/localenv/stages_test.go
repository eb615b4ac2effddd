package localenv

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestWithReadyDelay(t *testing.T) {
	in := []byte(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  next:
    statusTemplate: |
      phase: Running
`)
	out, err := withReadyDelay(in)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Metadata struct{ Name string }
		Spec     struct {
			ResourceRef struct{ Kind string } `json:"resourceRef"`
			Delay       struct {
				DurationMilliseconds *int `json:"durationMilliseconds"`
				DurationFrom         struct {
					ExpressionFrom string `json:"expressionFrom"`
				} `json:"durationFrom"`
			}
			Next struct {
				StatusTemplate string `json:"statusTemplate"`
			}
		}
	}
	if err := yaml.Unmarshal(out, &st); err != nil {
		t.Fatal(err)
	}
	if st.Metadata.Name != "pod-ready" || st.Spec.ResourceRef.Kind != "Pod" || !strings.Contains(st.Spec.Next.StatusTemplate, "phase: Running") {
		t.Errorf("the stage lost its fields:\n%s", out)
	}
	if st.Spec.Delay.DurationMilliseconds == nil || *st.Spec.Delay.DurationMilliseconds != 0 ||
		st.Spec.Delay.DurationFrom.ExpressionFrom != `.metadata.annotations["pod-ready.stage.kwok.x-k8s.io/delay"]` {
		t.Errorf("delay %+v, want 0 ms unless the pod's %s says otherwise", st.Spec.Delay, AnnotationPodReadyDelay)
	}
	if _, err := withReadyDelay([]byte("kind: Stage\n")); err == nil {
		t.Error("a stage without spec: no error")
	}
}
