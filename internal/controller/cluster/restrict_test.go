package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/join"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestRestrictedJoin joins a member with --restrict-kinds configmaps,
// deployments.apps: the control plane's identity in the member may write
// those and is refused the rest, the MemberCluster marks every other kind
// read-only with condition KindsRestricted, the narrow identity still
// renews its own token, and joining again without restrictions lifts it
// all.
func TestRestrictedJoin(t *testing.T) {
	startController(t)
	ctx := context.Background()
	const name = "restricted"
	m := env.Cluster("member-2")
	o := join.Options{Name: name, Host: env.Host.Config, Member: m.Config, TokenDuration: 10 * time.Minute,
		RestrictKinds: []schema.GroupResource{{Resource: "configmap"}, {Group: "apps", Resource: "deployments"}}}
	if err := join.Join(ctx, o); err != nil {
		t.Fatalf("restricted join: %v", err)
	}
	t.Cleanup(func() {
		if err := join.Unjoin(context.Background(), join.UnjoinOptions{Name: name, Host: env.Host.Config, Member: m.Config}); err != nil {
			t.Errorf("unjoin: %v", err)
		}
		releaseClaim(t, name, m)
	})
	waitReady(t, name, metav1.ConditionTrue, member.ReasonReady, 60*time.Second)
	mc := waitKindsRestricted(t, name, true)
	c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionKindsRestricted)
	if c.Reason != v1alpha1.ReasonMemberRBAC || !strings.Contains(c.Message, "write only configmaps, deployments.apps;") {
		t.Errorf("KindsRestricted = %s: %q, want %s naming configmaps and deployments.apps", c.Reason, c.Message, v1alpha1.ReasonMemberRBAC)
	}
	for _, want := range []struct {
		group, resource string
		readOnly        bool
	}{{"", "configmaps", false}, {"apps", "deployments", false}, {"", "secrets", true}, {"", "pods", true}, {"batch", "jobs", true}} {
		found := false
		for _, r := range mc.Status.APIResources {
			if r.Group == want.group && r.Resource == want.resource {
				found = true
				if r.ReadOnly != want.readOnly {
					t.Errorf("%s.%s readOnly = %v, want %v", want.resource, want.group, r.ReadOnly, want.readOnly)
				}
			}
		}
		if !found {
			t.Errorf("%s.%s not in status.apiResources", want.resource, want.group)
		}
	}

	// The member's RBAC, not only the status, is narrow: the control
	// plane's own credential writes ConfigMaps and is refused Secrets.
	cs := memberClientAs(t, name, m)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "restricted-probe", Namespace: "default"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Errorf("create a ConfigMap with the restricted credential: %v", err)
	}
	_ = cs.CoreV1().ConfigMaps("default").Delete(ctx, cm.Name, metav1.DeleteOptions{})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "restricted-probe", Namespace: "default"}}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("create a Secret with the restricted credential: %v, want 403", err)
	}
	if _, err := cs.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list Secrets with the restricted credential: %v, want 403", err)
	}
	// The narrow identity renews its own token (the Role join adds).
	waitEventOf(t, name, "CredentialsRenewed", corev1.EventTypeNormal)

	// Joining again without restrictions lifts them.
	o.RestrictKinds = nil
	if err := join.Join(ctx, o); err != nil {
		t.Fatalf("join again without restrictions: %v", err)
	}
	waitKindsRestricted(t, name, false)
	if _, err := m.Client.RbacV1().Roles(v1alpha1.SystemNamespace).Get(ctx, join.TokenRoleName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Role %s after a full join: %v, want it deleted", join.TokenRoleName, err)
	}
}

// waitKindsRestricted waits for the KindsRestricted condition to be True
// (want) or absent, and, when absent, for no served kind to be read-only.
func waitKindsRestricted(t *testing.T, name string, want bool) *v1alpha1.MemberCluster {
	t.Helper()
	var mc *v1alpha1.MemberCluster
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("%s KindsRestricted present=%v", name, want), func(ctx context.Context) error {
		var err error
		if mc, err = get(ctx, name); err != nil {
			return err
		}
		c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionKindsRestricted)
		switch {
		case want && (c == nil || c.Status != metav1.ConditionTrue):
			return fmt.Errorf("KindsRestricted is %+v", c)
		case !want && c != nil:
			return fmt.Errorf("KindsRestricted is still %+v", c)
		case !want && member.ResourceSummary(mc.Status.APIResources, true, 5) != "":
			return fmt.Errorf("still read-only: %s", member.ResourceSummary(mc.Status.APIResources, true, 5))
		}
		return nil
	})
	return mc
}

// memberClientAs returns a client of the member that sends only the token
// stored for MemberCluster name (no admin certificate beside it).
func memberClientAs(t *testing.T, name string, m *testenv.Cluster) kubernetes.Interface {
	t.Helper()
	s := &corev1.Secret{}
	if err := hostClient.Get(context.Background(), types.NamespacedName{Namespace: v1alpha1.SystemNamespace, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(m.Config)
	cfg.BearerToken = string(s.Data[member.KeyToken])
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
