package autoscale_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/controller/autoscale"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestScaleFromAStaleTargetIsRefused: the federated HPA decides from the
// template cache. When a user scaled the target since the cache read it
// (10 → 30), the HPA's "10 → 12" must not land as a cut from 30 to 12 in
// every member: the write is refused with a Conflict and the user's 30
// stays. From the target as it is now, the write goes through.
func TestScaleFromAStaleTargetIsRefused(t *testing.T) {
	testenv.Need(t, env)
	ns := env.Namespace(t)
	ctx := context.Background()
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Host.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, testenv.MakeDeployment("web", ns).Replicas(10).Obj()); err != nil {
		t.Fatal(err)
	}
	read := func() *unstructured.Unstructured {
		t.Helper()
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	stale := read()
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr.To[int32](30)
	if err := c.Update(ctx, d); err != nil {
		t.Fatal(err)
	}

	r := &autoscale.Reconciler{Client: c}
	if err := autoscale.Scale(r, ctx, stale, 12); !apierrors.IsConflict(err) {
		t.Errorf("scale from the stale target: err %v, want a Conflict", err)
	}
	if got, _, _ := unstructured.NestedInt64(read().Object, "spec", "replicas"); got != 30 {
		t.Fatalf("after the refused write the target has %d replicas, want the user's 30", got)
	}
	if err := autoscale.Scale(r, ctx, read(), 32); err != nil {
		t.Fatalf("scale from the current target: %v", err)
	}
	if got, _, _ := unstructured.NestedInt64(read().Object, "spec", "replicas"); got != 32 {
		t.Errorf("the target has %d replicas, want 32", got)
	}

	// Written since the read, but not scaled (its status, a label): the
	// scale goes through on top of that write.
	before := read()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`))
	if err := c.Patch(ctx, before.DeepCopy(), patch); err != nil {
		t.Fatal(err)
	}
	if err := autoscale.Scale(r, ctx, before, 34); err != nil {
		t.Fatalf("scale after a write that left the replicas alone: %v", err)
	}
	after := read()
	if got, _, _ := unstructured.NestedInt64(after.Object, "spec", "replicas"); got != 34 || after.GetLabels()["touched"] != "yes" {
		t.Errorf("the target has %d replicas and labels %v, want 34 and the label kept", got, after.GetLabels())
	}
}
