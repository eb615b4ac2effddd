package schedule

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
)

// A failed write of a profile's Valid condition is made again on the
// profile's next use, although the built profile is cached.
func TestProfileValidWrittenAfterAFailedWrite(t *testing.T) {
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	sp := &v1alpha1.SchedulingProfile{ObjectMeta: metav1.ObjectMeta{Name: "fast", Generation: 1}}
	failures := 1
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sp).WithStatusSubresource(sp).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if failures > 0 {
				failures--
				return errors.New("the host is briefly unavailable")
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}).Build()
	r := &Reconciler{Client: c}
	ctx := context.Background()
	valid := func() *metav1.Condition {
		got := &v1alpha1.SchedulingProfile{}
		if err := c.Get(ctx, client.ObjectKey{Name: "fast"}, got); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(got.Status.Conditions, "Valid")
	}

	p1, _, err := r.profile(ctx, "fast")
	if err != nil || p1 == nil {
		t.Fatalf("profile() = %v, %v; want a profile", p1, err)
	}
	if cond := valid(); cond != nil {
		t.Fatalf("Valid condition %+v written although the write failed", cond)
	}
	p2, _, err := r.profile(ctx, "fast")
	if err != nil || p2 != p1 {
		t.Fatalf("second profile() = %p, %v; want the cached %p", p2, err, p1)
	}
	if cond := valid(); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("Valid condition %+v after the next use, want True", cond)
	}
}
