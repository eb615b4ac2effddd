package migrate

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestSettings(t *testing.T) {
	divide := func(f *v1alpha1.Failover) *v1alpha1.PropagationSpec {
		return &v1alpha1.PropagationSpec{Failover: f,
			Placement: v1alpha1.Placement{ReplicaScheduling: v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivide}}}
	}
	obj := func(apiVersion, kind string, annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetName("web")
		u.SetAnnotations(annotations)
		return u
	}
	for _, tt := range []struct {
		name          string
		spec          *v1alpha1.PropagationSpec
		tmpl          *unstructured.Unstructured
		wantThreshold time.Duration
		wantEnabled   bool
	}{
		{"a divided Deployment, default threshold", divide(nil), obj("apps/v1", "Deployment", nil), v1alpha1.DefaultUnschedulableSeconds * time.Second, true},
		{"the policy's threshold", divide(&v1alpha1.Failover{Application: &v1alpha1.ApplicationFailover{UnschedulableSeconds: ptr.To[int32](60)}}),
			obj("apps/v1", "Deployment", nil), time.Minute, true},
		{"turned off by the policy", divide(&v1alpha1.Failover{Application: &v1alpha1.ApplicationFailover{Disabled: true}}), obj("apps/v1", "Deployment", nil), 0, false},
		{"a duplicated Deployment", &v1alpha1.PropagationSpec{}, obj("apps/v1", "Deployment", nil), 0, false},
		{"a kind whose pods are not found", divide(nil), obj("v1", "ConfigMap", nil), 0, false},
		{"a StatefulSet numbered across the federation keeps its ranges", divide(nil), obj("apps/v1", "StatefulSet", nil), 0, false},
		{"a StatefulSet numbered per member", divide(nil), obj("apps/v1", "StatefulSet", map[string]string{v1alpha1.AnnotationOrdinals: v1alpha1.OrdinalsPerMember}),
			v1alpha1.DefaultUnschedulableSeconds * time.Second, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			threshold, enabled := settings(tt.spec, tt.tmpl)
			if threshold != tt.wantThreshold || enabled != tt.wantEnabled {
				t.Errorf("settings = %s, %v; want %s, %v", threshold, enabled, tt.wantThreshold, tt.wantEnabled)
			}
		})
	}
}
