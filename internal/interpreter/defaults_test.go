package interpreter

import (
	"math"
	"testing"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// TestReplicasDefaultToOne: a replicas rule without a default reads an
// object without the field as 1 replica (most kinds' API default), not 0,
// which would scale every such workload to nothing in every member.
func TestReplicasDefaultToOne(t *testing.T) {
	spec := v1alpha1.WorkloadInterpreterSpec{
		Target:   v1alpha1.InterpretedKind{Group: "example.com", Kind: "Thing"},
		Replicas: &v1alpha1.ReplicasRule{Path: "spec.replicas"},
	}
	in, errs := Compile(&spec, Options{})
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if n, ok := in.Replicas(&unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}); !ok || n != 1 {
		t.Errorf("Replicas of an object without the field = %d, %v; want 1", n, ok)
	}
	zero := int32(0)
	spec.Replicas.Default = &zero
	in, _ = Compile(&spec, Options{})
	if n, ok := in.Replicas(&unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}); !ok || n != 0 {
		t.Errorf("Replicas with default 0 = %d, %v; want 0", n, ok)
	}
}

// TestHoldFitsThePartitionField: a hold writes "100%" to an int-or-string
// partition and the largest int32 to a plain integer one (which "100%"
// would make the member refuse).
func TestHoldFitsThePartitionField(t *testing.T) {
	schemaWith := func(partition structuralschema.Structural) *structuralschema.Structural {
		obj := func(props map[string]structuralschema.Structural) structuralschema.Structural {
			return structuralschema.Structural{Generic: structuralschema.Generic{Type: "object"}, Properties: props}
		}
		typed := func(typ string) structuralschema.Structural {
			return structuralschema.Structural{Generic: structuralschema.Generic{Type: typ}}
		}
		s := obj(map[string]structuralschema.Structural{
			"spec": obj(map[string]structuralschema.Structural{
				"replicas":       typed("integer"),
				"paused":         typed("boolean"),
				"template":       {Generic: structuralschema.Generic{Type: "object"}, Extensions: structuralschema.Extensions{XPreserveUnknownFields: true}},
				"updateStrategy": obj(map[string]structuralschema.Structural{"partition": partition}),
			}),
		})
		return &s
	}
	spec := v1alpha1.WorkloadInterpreterSpec{
		Target:      v1alpha1.InterpretedKind{Group: "example.com", Kind: "Thing"},
		Replicas:    &v1alpha1.ReplicasRule{Path: "spec.replicas"},
		PodTemplate: &v1alpha1.PathRule{Path: "spec.template"},
		Rollout:     &v1alpha1.RolloutRule{Paused: "spec.paused", Partition: "spec.updateStrategy.partition"},
	}
	for _, tt := range []struct {
		name   string
		schema *structuralschema.Structural
		want   any
	}{
		{"an integer partition", schemaWith(structuralschema.Structural{Generic: structuralschema.Generic{Type: "integer"}}), int64(math.MaxInt32)},
		{"an int-or-string partition", schemaWith(structuralschema.Structural{Extensions: structuralschema.Extensions{XIntOrString: true}}), "100%"},
		{"no schema", nil, "100%"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, errs := Compile(&spec, Options{Schema: tt.schema})
			if len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
			o := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(3)}}}
			if err := in.SetRolloutPaused(o); err != nil {
				t.Fatal(err)
			}
			got, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "updateStrategy", "partition")
			if got != tt.want {
				t.Errorf("partition %#v, want %#v", got, tt.want)
			}
		})
	}
}
