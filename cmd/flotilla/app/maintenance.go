package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// maintenanceAction is what cordon, uncordon or drain does to a cluster.
type maintenanceAction string

const (
	actionCordon   maintenanceAction = "cordon"
	actionUncordon maintenanceAction = "uncordon"
	actionDrain    maintenanceAction = "drain"
)

// drainListedMax is how many remaining objects a drain timeout names.
const drainListedMax = 10

// MaintenanceOptions are the inputs of `flotilla cordon`, `flotilla
// uncordon` and `flotilla drain`.
type MaintenanceOptions struct {
	// Cluster is the MemberCluster's name.
	Cluster string
	// Wait makes drain wait until no object is left on the cluster.
	Wait bool
	// Timeout bounds drain's wait.
	Timeout time.Duration
	// Force lets drain delete copies that no other cluster takes (the
	// last copy of a workload included) and drain the last cluster that
	// can take objects.
	Force bool

	action  maintenanceAction
	host    hostFlags
	client  client.Client
	streams Streams
}

// NewCordonCmd returns `flotilla cordon`.
func NewCordonCmd(streams Streams) *cobra.Command {
	return newMaintenanceCmd(streams, actionCordon, &cobra.Command{
		Use:   "cordon CLUSTER",
		Short: "Stop placing new objects on a member cluster",
		Long: `Cordon MemberCluster CLUSTER: add the taint flotilla.io/unschedulable with
effect NoSchedule to its spec.taints. The scheduler then gives the cluster no
new objects and no more replicas, except objects whose policy tolerates the
taint (placement.tolerations). Objects already on the cluster stay; drain
moves them away, uncordon removes the taint. Other taints are left alone.`,
		Example: `  flotilla cordon prod-east-1
  flotilla cordon edge-7 --host-kubeconfig host.kubeconfig`,
	})
}

// NewUncordonCmd returns `flotilla uncordon`.
func NewUncordonCmd(streams Streams) *cobra.Command {
	return newMaintenanceCmd(streams, actionUncordon, &cobra.Command{
		Use:   "uncordon CLUSTER",
		Short: "Let a cordoned or drained member cluster receive objects again",
		Long: `Uncordon MemberCluster CLUSTER: remove the taints flotilla.io/unschedulable
and flotilla.io/draining that cordon and drain add. Other taints, such as
those the cluster controller puts on a cluster that is not Ready, stay.

Uncordon moves nothing back by itself: it makes the cluster eligible again
and the scheduler reconsiders each object under its policy, so only objects
whose policy puts them on this cluster again (those meant for every matching
cluster, for instance) return; the others stay where drain moved them.`,
		Example: `  flotilla uncordon prod-east-1`,
	})
}

// NewDrainCmd returns `flotilla drain`.
func NewDrainCmd(streams Streams) *cobra.Command {
	return newMaintenanceCmd(streams, actionDrain, &cobra.Command{
		Use:   "drain CLUSTER",
		Short: "Move every object off a member cluster before maintenance",
		Long: `Drain MemberCluster CLUSTER: cordon it (taint flotilla.io/unschedulable,
NoSchedule) and add the taint flotilla.io/draining with effect NoExecute, so
that every object whose policy does not tolerate it moves to other members.

The move is graceful: the copy on CLUSTER is kept until the replacement
replicas are Ready in the other clusters, or until the policy's
failover.gracefulEvictionSeconds (default 600) have passed, and is deleted
then.

Drain never strands a workload: an object that no other cluster can take
keeps running on CLUSTER (Flotilla never deletes the last copy of an object),
and drain refuses to start when no other member is Ready and free of
NoSchedule/NoExecute taints. While waiting, it stops with an error naming
the objects that have nowhere to go once only those are left.

--force drains anyway: it lists the objects that run only on CLUSTER, which
will be deleted from it even if no other cluster takes them, and marks the
taint flotilla.io/draining=force so that their copies go.

Drain then waits, up to --timeout, until no FederatedObject is placed on
CLUSTER or still has a copy there, printing the count as it changes.
Objects whose policy tolerates flotilla.io/draining (placement.tolerations)
stay, so the wait can time out; the taints stay either way. With
--wait=false drain returns once the taints are set. Uncordon removes both
taints.`,
		Example: `  flotilla drain prod-east-1
  flotilla drain prod-east-1 --timeout 30m
  flotilla drain edge-7 --wait=false
  flotilla drain last-one --force   # deletes what nothing else can run`,
	})
}

// newMaintenanceCmd completes cmd (Use, help texts) into one of the
// maintenance verbs.
func newMaintenanceCmd(streams Streams, action maintenanceAction, cmd *cobra.Command) *cobra.Command {
	o := &MaintenanceOptions{action: action, streams: streams, Wait: true, Timeout: 10 * time.Minute}
	cmd.Args = cobra.ExactArgs(1)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
	fs := cmd.Flags()
	o.host.add(fs)
	if action == actionDrain {
		fs.BoolVar(&o.Wait, "wait", o.Wait, "wait until no object is left on the cluster")
		fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "how long to wait for the objects to leave the cluster")
		fs.BoolVar(&o.Force, "force", o.Force, "delete the cluster's copies even when no other cluster takes them (the last copy of a workload included)")
	}
	return cmd
}

// Complete takes the cluster's name from args and builds the host client.
func (o *MaintenanceOptions) Complete(args []string) error {
	o.Cluster = args[0]
	c, err := o.host.client()
	if err != nil {
		return err
	}
	o.client = c
	return nil
}

// Validate refuses bad input before anything is changed.
func (o *MaintenanceOptions) Validate() error {
	if o.Cluster == "" {
		return errors.New("a cluster name is required")
	}
	if o.action == actionDrain && o.Wait && o.Timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, not %s", o.Timeout)
	}
	return nil
}

// Run edits the cluster's taints and, for drain, waits for its objects to
// leave.
func (o *MaintenanceOptions) Run(ctx context.Context) error {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	cordon := corev1.Taint{Key: v1alpha1.TaintUnschedulable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &now}
	draining := corev1.Taint{Key: v1alpha1.TaintDraining, Effect: corev1.TaintEffectNoExecute, TimeAdded: &now}
	if o.Force {
		draining.Value = v1alpha1.DrainForce
	}
	var edit func([]corev1.Taint) ([]corev1.Taint, bool)
	var done, already string
	switch o.action {
	case actionCordon:
		edit = func(t []corev1.Taint) ([]corev1.Taint, bool) { return withTaint(t, cordon) }
		done, already = "cordoned", "already cordoned"
	case actionUncordon:
		edit = func(t []corev1.Taint) ([]corev1.Taint, bool) {
			return withoutTaints(t, v1alpha1.TaintUnschedulable, v1alpha1.TaintDraining)
		}
		done, already = "uncordoned", "already uncordoned"
	case actionDrain:
		if err := o.checkDrain(ctx); err != nil {
			return err
		}
		edit = func(t []corev1.Taint) ([]corev1.Taint, bool) {
			t, c1 := withTaint(t, cordon)
			t, c2 := withTaint(t, draining)
			return t, c1 || c2
		}
		done, already = "draining", "already draining"
		if o.Force {
			done, already = "draining (forced)", "already draining (forced)"
		}
	default:
		return fmt.Errorf("unknown action %q", o.action)
	}
	changed, err := o.updateTaints(ctx, edit)
	if err != nil {
		return err
	}
	if changed {
		fmt.Fprintf(o.streams.Out, "membercluster/%s %s\n", o.Cluster, done)
	} else {
		fmt.Fprintf(o.streams.Out, "membercluster/%s %s\n", o.Cluster, already)
	}
	if o.action != actionDrain || !o.Wait {
		return nil
	}
	return o.waitDrained(ctx)
}

// updateTaints applies edit to the cluster's spec.taints, writing with
// Update and retrying on conflicts. It reports whether anything changed.
func (o *MaintenanceOptions) updateTaints(ctx context.Context, edit func([]corev1.Taint) ([]corev1.Taint, bool)) (bool, error) {
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc := &v1alpha1.MemberCluster{}
		if err := o.client.Get(ctx, client.ObjectKey{Name: o.Cluster}, mc); err != nil {
			return err
		}
		var taints []corev1.Taint
		taints, changed = edit(mc.Spec.Taints)
		if !changed {
			return nil
		}
		mc.Spec.Taints = taints
		return o.client.Update(ctx, mc)
	})
	switch {
	case apierrors.IsNotFound(err):
		return false, fmt.Errorf("membercluster %q not found", o.Cluster)
	case err != nil:
		return false, fmt.Errorf("update the taints of membercluster %q: %w", o.Cluster, err)
	}
	return changed, nil
}

// waitDrained polls the FederatedObjects every second until none is left
// on the cluster, or o.Timeout has passed.
func (o *MaintenanceOptions) waitDrained(ctx context.Context) error {
	var remaining []remainingObject
	listed := false
	last, strandedPolls := -1, 0
	err := wait.PollUntilContextTimeout(ctx, time.Second, o.Timeout, true, func(ctx context.Context) (bool, error) {
		var list v1alpha1.FederatedObjectList
		if err := o.client.List(ctx, &list); err != nil {
			if !listed {
				// The first list failing is likely to last (RBAC, no CRD).
				return false, fmt.Errorf("list FederatedObjects: %w", err)
			}
			return false, nil // a blip during a long drain: try again
		}
		listed = true
		remaining = remainingObjects(list.Items, o.Cluster)
		if n := len(remaining); n > 0 && n != last {
			fmt.Fprintf(o.streams.Out, "evicting %d objects from %s\n", n, o.Cluster)
		}
		last = len(remaining)
		if !o.Force && last > 0 {
			// Only objects with nowhere to go left, twice in a row (the
			// scheduler has seen the taints): they stay, say so.
			if s := stranded(list.Items, o.Cluster); len(s) == last {
				if strandedPolls++; strandedPolls >= 2 {
					return false, strandedError(o.Cluster, s)
				}
			} else {
				strandedPolls = 0
			}
		}
		return last == 0, nil
	})
	switch {
	case err == nil:
		fmt.Fprintf(o.streams.Out, "membercluster/%s drained\n", o.Cluster)
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("drain %s interrupted: %w (the taints stay)", o.Cluster, ctx.Err())
	case !wait.Interrupted(err):
		return err
	}
	return drainTimeoutError(o.Cluster, o.Timeout, remaining)
}

// drainTimeoutError says which objects are still on cluster after timeout.
func drainTimeoutError(cluster string, timeout time.Duration, remaining []remainingObject) error {
	names := make([]string, 0, drainListedMax)
	for i, r := range remaining {
		if i == drainListedMax {
			names = append(names, fmt.Sprintf("and %d more", len(remaining)-drainListedMax))
			break
		}
		names = append(names, r.String())
	}
	return fmt.Errorf("membercluster/%s not drained after %s: %d objects remain: %s; objects whose policy tolerates the taint %s (placement.tolerations) stay on the cluster",
		cluster, timeout, len(remaining), strings.Join(names, ", "), v1alpha1.TaintDraining)
}

// withTaint returns taints with t added at the end, and true, unless a
// taint with t's key and effect is already there: then taints is returned
// as is (keeping its value and timeAdded), with false. taints is never
// modified.
func withTaint(taints []corev1.Taint, t corev1.Taint) ([]corev1.Taint, bool) {
	for i, have := range taints {
		if have.Key == t.Key && have.Effect == t.Effect {
			if have.Value == t.Value || t.Value == "" {
				return taints, false
			}
			// A drain --force over a plain drain: the value changes.
			out := slices.Clone(taints)
			out[i].Value = t.Value
			return out, true
		}
	}
	return append(slices.Clone(taints), t), true
}

// withoutTaints returns taints without those whose key is one of keys
// (whatever their effect), the others in order, and whether any was
// removed. taints is never modified.
func withoutTaints(taints []corev1.Taint, keys ...string) ([]corev1.Taint, bool) {
	kept := make([]corev1.Taint, 0, len(taints))
	for _, t := range taints {
		if !slices.Contains(keys, t.Key) {
			kept = append(kept, t)
		}
	}
	if len(kept) == len(taints) {
		return taints, false
	}
	return kept, true
}

// remainingObject is a FederatedObject still placed on, or still holding a
// copy in, the cluster being drained.
type remainingObject struct {
	// Namespace and Name of the FederatedObject.
	Namespace, Name string
	// Reason is the state of the cluster's copy in status.clusters; empty
	// while the status does not list the cluster.
	Reason v1alpha1.PropagationReason
}

// String is namespace/name with the copy's state.
func (r remainingObject) String() string {
	reason := string(r.Reason)
	if reason == "" {
		reason = "placed, no status yet"
	}
	return fmt.Sprintf("%s/%s (%s)", r.Namespace, r.Name, reason)
}

// remainingObjects returns the objects that have cluster in their
// spec.placement or status.clusters, sorted by namespace and name.
func remainingObjects(objs []v1alpha1.FederatedObject, cluster string) []remainingObject {
	var out []remainingObject
	for i := range objs {
		fo := &objs[i]
		placed := slices.ContainsFunc(fo.Spec.Placement, func(p v1alpha1.ClusterPlacement) bool { return p.Cluster == cluster })
		r := remainingObject{Namespace: fo.Namespace, Name: fo.Name}
		copied := false
		for _, s := range fo.Status.Clusters {
			if s.Cluster == cluster {
				r.Reason, copied = s.Reason, true
				break
			}
		}
		if placed || copied {
			out = append(out, r)
		}
	}
	sortRemaining(out)
	return out
}
