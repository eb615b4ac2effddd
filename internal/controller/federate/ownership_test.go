package federate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// Each controller applies only the status fields it owns, under its own
// field manager: the scheduler the placement and the Scheduled condition,
// propagate the copies and the Propagated condition; nobody replaces the
// whole status. Creating copies records no event on the template (the
// status says it); changing them does.
func TestStatusHasOneOwnerPerField(t *testing.T) {
	startControlPlane(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	dep, foKey := propagatedDeployment(t, ns)

	fo := &v1alpha1.FederatedObject{}
	if err := admin.Get(ctx, foKey, fo); err != nil {
		t.Fatal(err)
	}
	owned := map[string]string{}
	for _, f := range fo.ManagedFields {
		if f.Subresource != "status" {
			continue
		}
		if f.Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("status written by %s with %s, want server-side apply only", f.Manager, f.Operation)
		}
		if f.FieldsV1 != nil {
			owned[f.Manager] = string(f.FieldsV1.Raw)
		}
	}
	want := map[string]struct{ has, hasNot []string }{
		v1alpha1.FieldManagerSchedule:  {has: []string{`"f:scheduledClusters"`, `"f:schedulingBasis"`, `{\"type\":\"Scheduled\"}`}, hasNot: []string{`"f:clusters"`, `{\"type\":\"Propagated\"}`}},
		v1alpha1.FieldManagerPropagate: {has: []string{`"f:clusters"`, `"f:observedGeneration"`, `{\"type\":\"Propagated\"}`}, hasNot: []string{`"f:scheduledClusters"`, `{\"type\":\"Scheduled\"}`}},
	}
	for manager, w := range want {
		fields, ok := owned[manager]
		if !ok {
			t.Errorf("no status fields owned by %s; owners: %v", manager, keys(owned))
			continue
		}
		for _, s := range w.has {
			if !strings.Contains(fields, s) {
				t.Errorf("%s does not own %s: %s", manager, s, fields)
			}
		}
		for _, s := range w.hasNot {
			if strings.Contains(fields, s) {
				t.Errorf("%s owns %s, another controller's field: %s", manager, s, fields)
			}
		}
	}
	if len(owned) != len(want) {
		t.Errorf("status owners %v, want exactly %v", keys(owned), keys(want))
	}

	if e := findEvent(ctx, t, ns, "Deployment", dep.Name, "Created"); e != nil {
		t.Errorf("event %q on creating copies, want none", e.Note)
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := admin.Get(ctx, *dep, d); err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = "registry.example/web:2"
		return admin.Update(ctx, d)
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "an Updated event on the template", func(ctx context.Context) error {
		if findEvent(ctx, t, ns, "Deployment", dep.Name, "Updated") == nil {
			return fmt.Errorf("no Updated event on Deployment %s", dep)
		}
		return nil
	})
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
