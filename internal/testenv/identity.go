package testenv

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/flotilla-io/flotilla/config/rbac"
	"github.com/flotilla-io/flotilla/internal/localenv"
)

// ControllerConfig returns a new client configuration for the host as the
// controller-manager: the ServiceAccount
// flotilla-system/flotilla-controller-manager, which has only the
// permissions of the shipped, generated role (config/rbac), as in
// `flotilla up`. Run in-process controllers with it, so that a missing
// permission fails the tests.
func (e *Environment) ControllerConfig(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := localenv.RESTConfig(e.controllerKubeconfig)
	if err != nil {
		t.Fatalf("controller-manager kubeconfig: %v", err)
	}
	return cfg
}

// GrantControllerSecrets applies the optional grant of config/rbac
// (Secrets in every namespace) to the controller-manager's identity until
// the test ends.
func (e *Environment) GrantControllerSecrets(t testing.TB) {
	t.Helper()
	e.grantController(t, rbac.OptionalFile, rbac.SecretsClusterRole)
}

// GrantControllerLegacyFinalizer applies config/rbac's grant for hosts
// upgraded from a version that put a finalizer on templates (patch of the
// built-in template kinds) to the controller-manager's identity until the
// test ends.
func (e *Environment) GrantControllerLegacyFinalizer(t testing.TB) {
	t.Helper()
	e.grantController(t, rbac.LegacyFinalizerFile, rbac.LegacyFinalizerClusterRole)
}

// grantController applies an embedded file of config/rbac to the host and
// deletes its ClusterRoleBinding binding when the test ends.
func (e *Environment) grantController(t testing.TB, file, binding string) {
	t.Helper()
	if err := rbac.Apply(context.Background(), e.Host.Config, file); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := e.Host.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("revoke %s: %v", binding, err)
		}
	})
}
