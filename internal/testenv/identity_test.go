package testenv_test

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-io/flotilla/config/rbac"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// The controller-manager's identity in the host is its ServiceAccount with
// the shipped role, not an admin: it reads Secrets only in flotilla-system
// (unless the optional grant is applied), and reads the template kinds.
// (Before, `flotilla up` ran it with the admin token, group
// system:masters, and the role granted every kind, Secrets included.)
func TestControllerIdentityHasOnlyTheShippedRole(t *testing.T) {
	testenv.Need(t, env)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.ControllerConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := review.Status.UserInfo.Username; got != rbac.Username {
		t.Errorf("controller-manager authenticates as %q, want %q", got, rbac.Username)
	}
	for _, g := range review.Status.UserInfo.Groups {
		if g == "system:masters" {
			t.Errorf("controller-manager is in group system:masters")
		}
	}
	may := func(ns, group, resource, verb string) bool {
		t.Helper()
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Group: group, Resource: resource, Verb: verb},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	tests := []struct {
		ns, group, resource, verb string
		want                      bool
	}{
		{"", "", "secrets", "list", false},
		{"", "", "secrets", "get", false},
		{"default", "", "secrets", "watch", false},
		{"kube-system", "", "secrets", "get", false},
		{rbac.Namespace, "", "secrets", "list", true},
		{rbac.Namespace, "", "secrets", "create", false},
		{"", "apps", "deployments", "watch", true},
		{"", "", "configmaps", "list", true},
		{"", "flotilla.io", "federatedobjects", "create", true},
		{"", "apps", "deployments", "create", false},
		{"", "apps", "deployments", "delete", false},
		{"", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "patch", false},
		{"", "example.com", "widgets", "list", false},
		{"", "rbac.authorization.k8s.io", "clusterrolebindings", "create", false},
	}
	for _, tt := range tests {
		if got := may(tt.ns, tt.group, tt.resource, tt.verb); got != tt.want {
			t.Errorf("controller-manager may %s %s.%s in %q: %v, want %v", tt.verb, tt.resource, tt.group, tt.ns, got, tt.want)
		}
	}
}
