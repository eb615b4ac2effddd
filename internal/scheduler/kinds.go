package scheduler

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/workload"
)

var (
	statefulSet = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	cronJob     = schema.GroupKind{Group: "batch", Kind: "CronJob"}
)

// sticky says whether an object stays on its clusters: when its policy
// says so, when it asks with AnnotationSticky "true", and for a divided
// StatefulSet unless it says "false" (its pods' identities and volumes
// are where they are). The annotation cannot unstick a sticky policy.
func sticky(p *v1alpha1.Placement, gk schema.GroupKind, annotations map[string]string) bool {
	if p.Sticky {
		return true
	}
	switch annotations[v1alpha1.AnnotationSticky] {
	case "true":
		return true
	case "false":
		return false
	}
	return gk == statefulSet && p.ReplicaScheduling.Type == v1alpha1.ReplicaSchedulingDivide
}

// FederatedOrdinals reports whether the pods of u (whose template is
// tmpl) are numbered across the federation — a StatefulSet divided over
// clusters, not annotated AnnotationOrdinals "per-member" — and the first
// ordinal: the template's spec.ordinals.start (default 0). The
// placement's ranges then come from ordinals.Assign.
func FederatedOrdinals(u *framework.Unit, tmpl *unstructured.Unstructured) (base int32, ok bool) {
	if u.GVK.GroupKind() != statefulSet || !u.Divide() {
		return 0, false
	}
	if tmpl.GetAnnotations()[v1alpha1.AnnotationOrdinals] == v1alpha1.OrdinalsPerMember {
		return 0, false
	}
	if start, found, _ := unstructured.NestedInt64(tmpl.Object, "spec", "ordinals", "start"); found && start > 0 && start < 1<<31 {
		base = int32(start)
	}
	return base, true
}

// DividedJob reports whether u (whose template is tmpl) is a Job whose
// completions are divided over clusters, and whether it is Indexed (its
// placement then carries ranges of completion indexes). A divided Job's
// placement is kept once made: a member's Job cannot change its
// completions.
func DividedJob(u *framework.Unit, tmpl *unstructured.Unstructured) (indexed, ok bool) {
	if !workload.IsJob(u.GVK.GroupKind()) || !u.Divide() {
		return false, false
	}
	return workload.IndexedJob(tmpl), true
}
