package testenv_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestHostRoleBindingsAreChecked: the host fills the built-in admin role
// (ClusterRole aggregation), so a tenant who may create RoleBindings in a
// namespace but holds nothing else there cannot bind admin: the binding
// would be propagated and grant admin in every member. On a host without
// aggregation admin is empty and the host lets anyone bind it.
func TestHostRoleBindingsAreChecked(t *testing.T) {
	testenv.Need(t, env)
	ctx := context.Background()
	ns := env.Namespace(t)
	testenv.Eventually(t, time.Minute, "the host's admin ClusterRole has rules", func(ctx context.Context) error {
		r, err := env.Host.Client.RbacV1().ClusterRoles().Get(ctx, "admin", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(r.Rules) == 0 {
			return fmt.Errorf("admin has no rules")
		}
		return nil
	})
	binder := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "binder", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, Verbs: []string{"create"}}}}
	if _, err := env.Host.Client.RbacV1().Roles(ns).Create(ctx, binder, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant-binder", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "binder"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: "rbac.authorization.k8s.io", Name: "tenant"}}}
	if _, err := env.Host.Client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Host.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "tenant"}
	tenant, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	toAdmin := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "friend-admin", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: "rbac.authorization.k8s.io", Name: "friend"}}}
	// The tenant's own grant reaches the authorizer's cache at once; the
	// refusal must be for the escalation, not for a missing create right.
	testenv.Eventually(t, 30*time.Second, "the tenant's binding to admin refused as an escalation", func(ctx context.Context) error {
		_, err := tenant.RbacV1().RoleBindings(ns).Create(ctx, toAdmin, metav1.CreateOptions{})
		switch {
		case err == nil:
			_ = env.Host.Client.RbacV1().RoleBindings(ns).Delete(ctx, toAdmin.Name, metav1.DeleteOptions{})
			t.Fatalf("a tenant holding only rolebindings create bound admin")
		case apierrors.IsForbidden(err) && containsEscalation(err.Error()):
			return nil
		}
		return err
	})
}

// containsEscalation reports whether msg is the RBAC escalation check's
// refusal.
func containsEscalation(msg string) bool {
	return strings.Contains(msg, "attempting to grant RBAC permissions not currently held") || strings.Contains(msg, "escalat")
}
