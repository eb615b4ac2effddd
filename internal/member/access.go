package member

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// WriteVerbs are the verbs propagation needs on a kind in a member: it
// watches its copies, creates and server-side applies them (patch), and
// deletes them.
var WriteVerbs = []string{"get", "list", "watch", "create", "patch", "delete"}

// Access is what the session's identity may do in the member, as the
// member's authorizer reported it in a SelfSubjectRulesReview.
type Access struct {
	// Known is false when the member gave no usable answer or said its
	// answer is incomplete (an authorizer other than RBAC decides too):
	// every served kind is then taken as writable, as before a review.
	Known bool
	// rules are the resource rules that grant on every object of a
	// resource (rules limited to resource names are left out).
	rules []authorizationv1.ResourceRule
}

// AccessFromRules builds an Access from a rules review's resource rules;
// incomplete says the member could not list every rule.
func AccessFromRules(rules []authorizationv1.ResourceRule, incomplete bool) Access {
	if incomplete {
		return Access{}
	}
	a := Access{Known: true}
	for _, r := range rules {
		if len(r.ResourceNames) == 0 {
			a.rules = append(a.rules, r)
		}
	}
	return a
}

// Writable reports whether every verb in WriteVerbs is granted on the
// resource (no subresource) of group.
func (a Access) Writable(group, resource string) bool {
	if !a.Known {
		return true
	}
	for _, verb := range WriteVerbs {
		if !a.allows(verb, group, resource) {
			return false
		}
	}
	return true
}

func (a Access) allows(verb, group, resource string) bool {
	for i := range a.rules {
		r := &a.rules[i]
		if matches(r.Verbs, verb) && matches(r.APIGroups, group) && matches(r.Resources, resource) {
			return true
		}
	}
	return false
}

// matches reports whether values grant v: it is listed, or "*" is.
func matches(values []string, v string) bool {
	return slices.Contains(values, v) || slices.Contains(values, "*")
}

// MarkReadOnly sets ReadOnly on the resources of rs the identity may not
// write (all false when the access is not Known) and returns how many it
// marked.
func (a Access) MarkReadOnly(rs []v1alpha1.APIResource) int {
	n := 0
	for i := range rs {
		rs[i].ReadOnly = !a.Writable(rs[i].Group, rs[i].Resource)
		if rs[i].ReadOnly {
			n++
		}
	}
	return n
}

// accessNamespace is the namespace the rules review asks about: the
// control plane's own namespace in the member. The only Role join binds
// there (a restricted join's right to renew its token) names its object,
// so AccessFromRules leaves it out and the answer is the cluster-wide
// grants.
const accessNamespace = v1alpha1.SystemNamespace

// ReviewAccess asks the member what the client's identity may do. An
// error says the member refused or could not answer; the caller then keeps
// every served kind writable.
func ReviewAccess(ctx context.Context, cs kubernetes.Interface) (Access, error) {
	review, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: accessNamespace},
	}, metav1.CreateOptions{})
	if err != nil {
		return Access{}, fmt.Errorf("review the control plane's access in the member (SelfSubjectRulesReview): %w", err)
	}
	return AccessFromRules(review.Status.ResourceRules, review.Status.Incomplete), nil
}

// ResourceSummary names the resources of rs that are read-only (readOnly
// true) or writable (false) for a condition message, each resource once
// whatever its versions: at most limit names (resource.group), then how
// many more.
func ResourceSummary(rs []v1alpha1.APIResource, readOnly bool, limit int) string {
	var names []string
	seen := map[string]bool{}
	for _, r := range rs {
		if name := QualifiedResource(r); r.ReadOnly == readOnly && !seen[name] {
			seen[name] = true
			if len(names) < limit {
				names = append(names, name)
			}
		}
	}
	s := strings.Join(names, ", ")
	if more := len(seen) - len(names); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// QualifiedResource names a resource as kubectl does: resource.group, or
// the bare resource for the core group.
func QualifiedResource(r v1alpha1.APIResource) string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}
