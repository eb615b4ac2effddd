package maintenance

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Cluster runs maintenance operations on one MemberCluster of the host.
type Cluster struct {
	// Client reads and writes the host.
	Client client.Client
	// Name is the MemberCluster's name.
	Name string
}

// Cordon adds the cordon taint; it reports whether anything changed.
func (c Cluster) Cordon(ctx context.Context, now time.Time) (bool, error) {
	return c.updateTaints(ctx, func(t []corev1.Taint) ([]corev1.Taint, bool) { return WithTaint(t, CordonTaint(now)) })
}

// Uncordon removes the cordon and drain taints (others stay); it reports
// whether anything changed.
func (c Cluster) Uncordon(ctx context.Context) (bool, error) {
	return c.updateTaints(ctx, func(t []corev1.Taint) ([]corev1.Taint, bool) {
		return WithoutTaints(t, v1alpha1.TaintUnschedulable, v1alpha1.TaintDraining)
	})
}

// CheckDrain refuses a drain that would strand workloads, unless forced:
// when no other member cluster is Ready and free of NoSchedule and
// NoExecute taints, nothing placed on the cluster could move. A forced
// drain returns the objects that run only on the cluster, which will be
// deleted from it if no other cluster takes them.
func (c Cluster) CheckDrain(ctx context.Context, force bool) ([]Object, error) {
	var clusters v1alpha1.MemberClusterList
	if err := c.Client.List(ctx, &clusters); err != nil {
		return nil, fmt.Errorf("list MemberClusters: %w", err)
	}
	if !slices.ContainsFunc(clusters.Items, func(mc v1alpha1.MemberCluster) bool { return mc.Name == c.Name }) {
		return nil, fmt.Errorf("membercluster %q not found", c.Name)
	}
	if force {
		var objs v1alpha1.FederatedObjectList
		if err := c.Client.List(ctx, &objs); err != nil {
			return nil, fmt.Errorf("list FederatedObjects: %w", err)
		}
		return OnlyOn(objs.Items, c.Name), nil
	}
	if others := EligibleOthers(clusters.Items, c.Name); len(others) == 0 {
		return nil, fmt.Errorf("refusing to drain %s: no other member cluster is Ready and free of NoSchedule/NoExecute taints, so its objects would have nowhere to go (they would keep running there and the drain would never finish); make another cluster available, or use --force to delete them from %s", c.Name, c.Name)
	}
	return nil, nil
}

// Drain adds the cordon and drain taints (the drain taint valued "force"
// when forced). A plain drain of a cluster drained with force takes the
// force away: copies with nowhere to go are then kept again. It reports
// whether anything changed and whether it took a force away. Call
// CheckDrain first.
func (c Cluster) Drain(ctx context.Context, now time.Time, force bool) (changed, unforced bool, err error) {
	changed, err = c.updateTaints(ctx, func(t []corev1.Taint) ([]corev1.Taint, bool) {
		unforced = !force && slices.ContainsFunc(t, isForcedDrain)
		t, c1 := WithTaint(t, CordonTaint(now))
		t, c2 := WithTaint(t, DrainTaint(now, force))
		return t, c1 || c2
	})
	return changed, unforced && changed, err
}

// isForcedDrain reports whether t is the drain taint of a forced drain.
func isForcedDrain(t corev1.Taint) bool {
	return t.Key == v1alpha1.TaintDraining && t.Effect == corev1.TaintEffectNoExecute && t.Value == v1alpha1.DrainForce
}

// WaitOptions tune WaitDrained.
type WaitOptions struct {
	// Timeout bounds the wait.
	Timeout time.Duration
	// Interval is the time between polls (default one second).
	Interval time.Duration
	// Force keeps waiting when only objects with nowhere to go remain
	// (a forced drain deletes them).
	Force bool
	// Progress, if set, is called with the number of objects left each
	// time it changes.
	Progress func(remaining int)
}

// WaitDrained polls the FederatedObjects until none is placed on the
// cluster or has a copy there. Without Force it stops with a
// StrandedError once only objects with nowhere to go remain (two polls in
// a row, so that the scheduler has seen the taints); after Timeout it
// returns a TimeoutError naming what remains.
func (c Cluster) WaitDrained(ctx context.Context, o WaitOptions) error {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	var remaining []Object
	listed := false
	last, strandedPolls := -1, 0
	err := wait.PollUntilContextTimeout(ctx, o.Interval, o.Timeout, true, func(ctx context.Context) (bool, error) {
		var list v1alpha1.FederatedObjectList
		if err := c.Client.List(ctx, &list); err != nil {
			if !listed {
				// The first list failing is likely to last (RBAC, no CRD).
				return false, fmt.Errorf("list FederatedObjects: %w", err)
			}
			return false, nil // a blip during a long drain: try again
		}
		listed = true
		remaining = Remaining(list.Items, c.Name)
		if n := len(remaining); n > 0 && n != last && o.Progress != nil {
			o.Progress(n)
		}
		last = len(remaining)
		if !o.Force && last > 0 {
			if s := Stranded(list.Items, c.Name); len(s) == last {
				if strandedPolls++; strandedPolls >= 2 {
					return false, StrandedError(c.Name, s)
				}
			} else {
				strandedPolls = 0
			}
		}
		return last == 0, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("drain %s interrupted: %w (the taints stay)", c.Name, ctx.Err())
	case !wait.Interrupted(err):
		return err
	}
	return TimeoutError(c.Name, o.Timeout, remaining)
}

// updateTaints applies edit to the cluster's spec.taints, writing with
// Update and retrying on conflicts. It reports whether anything changed.
func (c Cluster) updateTaints(ctx context.Context, edit func([]corev1.Taint) ([]corev1.Taint, bool)) (bool, error) {
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc := &v1alpha1.MemberCluster{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: c.Name}, mc); err != nil {
			return err
		}
		var taints []corev1.Taint
		taints, changed = edit(mc.Spec.Taints)
		if !changed {
			return nil
		}
		mc.Spec.Taints = taints
		return c.Client.Update(ctx, mc)
	})
	switch {
	case apierrors.IsNotFound(err):
		return false, fmt.Errorf("membercluster %q not found", c.Name)
	case err != nil:
		return false, fmt.Errorf("update the taints of membercluster %q: %w", c.Name, err)
	}
	return changed, nil
}
