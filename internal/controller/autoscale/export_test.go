package autoscale

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Scale exposes the reconciler's write of a target's replicas to the
// package's external tests.
func Scale(r *Reconciler, ctx context.Context, tmpl *unstructured.Unstructured, replicas int32) error {
	return r.scale(ctx, tmpl, replicas)
}
