package workload

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSetReplicas(t *testing.T) {
	tests := []struct {
		name    string
		obj     map[string]any
		want    int64
		wantErr bool
	}{
		{name: "replaces", obj: map[string]any{"spec": map[string]any{"replicas": int64(5)}}, want: 2},
		{name: "adds", obj: map[string]any{"spec": map[string]any{}}, want: 2},
		{name: "adds spec", obj: map[string]any{}, want: 2},
		{name: "spec is not an object", obj: map[string]any{"spec": "oops"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: tt.obj}
			err := SetReplicas(u, 2)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("SetReplicas() = nil, want an error (left %v)", u.Object)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); got != tt.want {
				t.Errorf("spec.replicas = %d, want %d", got, tt.want)
			}
		})
	}
}
