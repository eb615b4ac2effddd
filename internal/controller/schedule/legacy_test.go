package schedule

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/policy"
	"github.com/flotilla-io/flotilla/internal/templates"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// A FederatedObject written by a version that kept the placement in
// spec.placement keeps its clusters: the scheduler's first pass decides
// from them (here a sticky policy keeps them) and records the decision in
// status.scheduledClusters, and only then clears spec.placement. The
// status fields are the scheduler's alone: its field manager owns them
// and nothing else.
func TestLegacyPlacementIsCarriedIntoStatus(t *testing.T) {
	testenv.Need(t, env)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, tc := hostClients(ctx, t)

	ns := env.Namespace(t)
	// Two clusters, a sticky policy naming both, and a legacy placement on
	// the second only: reading the legacy placement keeps the object
	// there; losing it would place the object on both.
	var mcs []*v1alpha1.MemberCluster
	for _, n := range []string{"a-" + ns, "b-" + ns} {
		mcs = append(mcs, &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: v1alpha1.MemberClusterSpec{APIEndpoint: "https://192.0.2.1:6443", SecretRef: &v1alpha1.SecretReference{Name: "none"}}})
	}
	mc := mcs[1]
	cpp := &v1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "legacy-" + ns},
		Spec: v1alpha1.PropagationSpec{Placement: v1alpha1.Placement{ClusterNames: []string{mcs[0].Name, mcs[1].Name}, Sticky: true}}}
	for _, o := range []client.Object{mcs[0], mcs[1], cpp} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), o) })
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	key := templates.Key{Kind: "ConfigMap", Namespace: ns, Name: cm.Name}
	testenv.Eventually(t, 30*time.Second, "the template in the cache", func(context.Context) error {
		tmpl, err := tc.Get(key)
		if err == nil && tmpl == nil {
			return fmt.Errorf("%s not cached yet", key)
		}
		return err
	})
	legacy := []v1alpha1.ClusterPlacement{{Cluster: mc.Name}}
	fo := &v1alpha1.FederatedObject{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.FederatedName().Name},
		Spec: v1alpha1.FederatedObjectSpec{
			Template:  v1alpha1.TemplateReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: cm.Name, UID: cm.UID},
			Policy:    &v1alpha1.PolicyReference{Kind: policy.KindClusterPropagationPolicy, Name: cpp.Name},
			Placement: legacy,
		},
	}
	if err := c.Create(ctx, fo); err != nil {
		t.Fatal(err)
	}

	r := &Reconciler{Client: c, Templates: tc}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: fo.Name}}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.FederatedObject{}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Placement) != 0 {
		t.Errorf("spec.placement = %v after the scheduler's pass, want it cleared", got.Spec.Placement)
	}
	if len(got.Status.ScheduledClusters) != 1 || got.Status.ScheduledClusters[0].Cluster != mc.Name {
		t.Errorf("status.scheduledClusters = %v, want the legacy placement %v kept", got.Status.ScheduledClusters, legacy)
	}
	if cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionScheduled); cond == nil {
		t.Error("no Scheduled condition")
	}
	owners := statusOwners(got)
	if len(owners) != 1 || owners[0] != v1alpha1.FieldManagerSchedule {
		t.Errorf("status written by %v, want only %s (server-side apply)", owners, v1alpha1.FieldManagerSchedule)
	}

	// A second pass over an unchanged object writes nothing.
	rv := got.ResourceVersion
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != rv {
		t.Errorf("resourceVersion %s → %s: a pass over an unchanged object wrote it", rv, got.ResourceVersion)
	}
}

// statusOwners lists the managers of fo's status subresource, as
// "manager" for apply and "manager (Update)" for updates.
func statusOwners(fo *v1alpha1.FederatedObject) []string {
	var out []string
	for _, f := range fo.ManagedFields {
		if f.Subresource != "status" {
			continue
		}
		if f.Operation == metav1.ManagedFieldsOperationApply {
			out = append(out, f.Manager)
		} else {
			out = append(out, f.Manager+" ("+string(f.Operation)+")")
		}
	}
	return out
}

// A reconciler that asks a template cache still listing the host waits
// for it (GetSynced) rather than getting ErrNotSynced and requeueing: after
// a restart every object used to come back each second until the cache
// had listed everything.
func TestGetSyncedWaitsForTheCache(t *testing.T) {
	testenv.Need(t, env)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, _ := hostClients(ctx, t)
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "listed"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	tc, err := templates.New(env.Host.Config, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := tc.Start(ctx); err != nil {
			t.Errorf("template cache: %v", err)
		}
	}()
	got, err := tc.GetSynced(ctx, templates.Key{Kind: "ConfigMap", Namespace: ns, Name: cm.Name})
	if err != nil || got == nil {
		t.Fatalf("GetSynced right after Start = %v, %v; want the ConfigMap", got, err)
	}
}
