package policy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Adoption says whether an object's copies take over member objects of the
// same name that Flotilla does not manage.
type Adoption struct {
	// Adopt takes such member objects over in place.
	Adopt bool
	// Hint, when Adopt is false, completes a Conflict message: what would
	// make Flotilla adopt, or why the object's annotation did not.
	Hint string
}

// Values of the flotilla.io/conflict-resolution annotation (compared
// without regard to case).
const (
	annotationAdopt = "adopt"
	annotationAbort = "abort"
)

// WantsAdopt reports whether obj carries the annotation
// flotilla.io/conflict-resolution: adopt.
func WantsAdopt(obj *unstructured.Unstructured) bool {
	return strings.EqualFold(strings.TrimSpace(obj.GetAnnotations()[v1alpha1.AnnotationConflictResolution]), annotationAdopt)
}

// Adopt decides whether obj's copies adopt. The annotation
// flotilla.io/conflict-resolution on obj can only narrow what its
// namespace may ask for:
//
//   - "abort" turns adoption off, whatever the policy says;
//   - a policy with conflictResolution: Adopt adopts;
//   - "adopt" is honoured under a PropagationPolicy of obj's namespace (its
//     authors could set conflictResolution: Adopt themselves), never under a
//     ClusterPropagationPolicy that does not say Adopt.
//
// own is the policy that propagates obj (its Spec is nil when the policy is
// gone); nil for a follower. A follower has no policy of its own: its
// "adopt" is honoured only when it has leaders (the policies of the
// workloads that reference it) and every one would honour the annotation on
// the workload itself. leaders are ignored when own is set.
func Adopt(obj *unstructured.Unstructured, own *Chosen, leaders []Chosen) Adoption {
	value := strings.TrimSpace(obj.GetAnnotations()[v1alpha1.AnnotationConflictResolution])
	if strings.EqualFold(value, annotationAbort) {
		return Adoption{Hint: fmt.Sprintf("the annotation %s: %s on the object turns adoption off", v1alpha1.AnnotationConflictResolution, value)}
	}
	wants := strings.EqualFold(value, annotationAdopt)
	if own != nil {
		if policyAdopts(own) {
			return Adoption{Adopt: true}
		}
		if ownNamespace(own, obj.GetNamespace()) {
			if wants {
				return Adoption{Adopt: true}
			}
			return Adoption{Hint: fmt.Sprintf("set the annotation %s: adopt (or conflictResolution: Adopt in the policy) to take it over", v1alpha1.AnnotationConflictResolution)}
		}
		if wants {
			return Adoption{Hint: fmt.Sprintf("the annotation %s: adopt on the object is ignored: %s does not set conflictResolution: Adopt, and only a PropagationPolicy of the object's namespace lets the object ask for adoption",
				v1alpha1.AnnotationConflictResolution, describePolicy(own.Ref))}
		}
		return Adoption{Hint: fmt.Sprintf("set conflictResolution: Adopt in %s to take it over (under a cluster policy the object's annotation cannot ask for it)", describePolicy(own.Ref))}
	}
	if !wants {
		return Adoption{Hint: fmt.Sprintf("set the annotation %s: adopt on the object to take it over (honoured when every workload that references it may adopt)", v1alpha1.AnnotationConflictResolution)}
	}
	if len(leaders) == 0 {
		return Adoption{Hint: fmt.Sprintf("the annotation %s: adopt on the object is ignored: no propagated workload references it", v1alpha1.AnnotationConflictResolution)}
	}
	for i := range leaders {
		l := &leaders[i]
		if !policyAdopts(l) && !ownNamespace(l, obj.GetNamespace()) {
			return Adoption{Hint: fmt.Sprintf("the annotation %s: adopt on the object is ignored: a workload that references it is propagated by %s, which does not set conflictResolution: Adopt",
				v1alpha1.AnnotationConflictResolution, describePolicy(l.Ref))}
		}
	}
	return Adoption{Adopt: true}
}

// policyAdopts reports whether a policy says conflictResolution: Adopt.
func policyAdopts(c *Chosen) bool {
	return c.Spec != nil && c.Spec.ConflictResolution == v1alpha1.ConflictAdopt
}

// ownNamespace reports whether c is a PropagationPolicy of namespace.
func ownNamespace(c *Chosen, namespace string) bool {
	return c.Ref.Kind == KindPropagationPolicy && namespace != "" && c.Ref.Namespace == namespace
}

// describePolicy names a policy for messages.
func describePolicy(ref v1alpha1.PolicyReference) string {
	if ref.Namespace != "" {
		return ref.Kind + " " + ref.Namespace + "/" + ref.Name
	}
	return ref.Kind + " " + ref.Name
}
