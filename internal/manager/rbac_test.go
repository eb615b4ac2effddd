package manager

import (
	"context"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/config/rbac"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestControllerRoleOnTheHost asks the host's RBAC what the shipped role
// lets the controller-manager do: update its own CRDs, admission policies
// and webhook configuration but not others', and write no RBAC object or
// template.
func TestControllerRoleOnTheHost(t *testing.T) {
	testenv.Need(t, env)
	for _, tc := range []struct {
		group, resource, name, verb, namespace string
		allowed                                bool
	}{
		{"apiextensions.k8s.io", "customresourcedefinitions", "memberclusters.flotilla.io", "update", "", true},
		{"apiextensions.k8s.io", "customresourcedefinitions", "widgets.example.com", "update", "", false},
		{"apiextensions.k8s.io", "customresourcedefinitions", "widgets.example.com", "patch", "", false},
		{"admissionregistration.k8s.io", "validatingwebhookconfigurations", "flotilla-workloadinterpreters", "update", "", true},
		{"admissionregistration.k8s.io", "validatingwebhookconfigurations", "policy-engine", "update", "", false},
		{"admissionregistration.k8s.io", "validatingadmissionpolicies", "flotilla.io-accept-guard", "update", "", true},
		{"admissionregistration.k8s.io", "validatingadmissionpolicies", "someone-elses", "update", "", false},
		{"rbac.authorization.k8s.io", "clusterroles", "system:basic-user", "patch", "", false},
		{"rbac.authorization.k8s.io", "rolebindings", "admin", "patch", "kube-system", false},
		{"", "configmaps", "kube-proxy", "patch", "kube-system", false},
		{"", "namespaces", "kube-system", "patch", "", false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: rbac.Username, Groups: rbac.Groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: tc.group, Resource: tc.resource, Name: tc.name, Verb: tc.verb, Namespace: tc.namespace},
		}}
		got, err := env.Host.Client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != tc.allowed {
			t.Errorf("%s %s.%s %s/%s: allowed %v, want %v (%s)", tc.verb, tc.resource, tc.group, tc.namespace, tc.name, got.Status.Allowed, tc.allowed, got.Status.Reason)
		}
	}
}
