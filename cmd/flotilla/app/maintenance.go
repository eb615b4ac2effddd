package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/maintenance"
)

// maintenanceAction is what cordon, uncordon or drain does to a cluster.
type maintenanceAction string

const (
	actionCordon   maintenanceAction = "cordon"
	actionUncordon maintenanceAction = "uncordon"
	actionDrain    maintenanceAction = "drain"
)

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
taint flotilla.io/draining=force so that their copies go. Objects that
other clusters take still move gracefully. A later drain without --force
takes the force away again.

Drain then waits, up to --timeout, until no FederatedObject is placed on
CLUSTER or still has a copy there, printing the count as it changes. Copies
kept on purpose (Retained: claims' and namespaces') stay and do not count.
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
	c := maintenance.Cluster{Client: o.client, Name: o.Cluster}
	now := time.Now()
	var changed bool
	var err error
	var done, already string
	switch o.action {
	case actionCordon:
		changed, err = c.Cordon(ctx, now)
		done, already = "cordoned", "already cordoned"
	case actionUncordon:
		changed, err = c.Uncordon(ctx)
		done, already = "uncordoned", "already uncordoned"
	case actionDrain:
		only, cerr := c.CheckDrain(ctx, o.Force)
		if cerr != nil {
			return cerr
		}
		if len(only) > 0 {
			fmt.Fprintf(o.streams.Out, "drain --force: %d objects run only on %s and will be deleted from it if no other cluster takes them: %s\n",
				len(only), o.Cluster, maintenance.Names(only))
		}
		var unforced bool
		changed, unforced, err = c.Drain(ctx, now, o.Force)
		done, already = "draining", "already draining"
		switch {
		case o.Force:
			done, already = "draining (forced)", "already draining (forced)"
		case unforced:
			done = "draining (no longer forced: copies with nowhere to go are kept)"
		}
	default:
		return fmt.Errorf("unknown action %q", o.action)
	}
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
	err = c.WaitDrained(ctx, maintenance.WaitOptions{
		Timeout: o.Timeout,
		Force:   o.Force,
		Progress: func(n int) {
			fmt.Fprintf(o.streams.Out, "evicting %d objects from %s\n", n, o.Cluster)
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.streams.Out, "membercluster/%s drained\n", o.Cluster)
	return nil
}
