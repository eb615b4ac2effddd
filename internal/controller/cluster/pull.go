package cluster

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/pull"
)

// pullHash is the configuration hash of every pull session: nothing in the
// MemberCluster changes how the hub reaches an agent.
const pullHash = "pull"

// observePull makes sure a pull session runs for mc and returns what it
// knows: the heartbeat's damped health.
func (r *Reconciler) observePull(ctx context.Context, mc *v1alpha1.MemberCluster) (member.Snapshot, error) {
	if s := r.Pool.Current(mc.Name); s != nil && s.ConfigHash() == pullHash {
		return s.Snapshot(), nil
	}
	name := mc.Name
	logger := ctrl.Log.WithName("member").WithValues("cluster", name, "mode", v1alpha1.SyncModePull)
	cfg := pull.Config{
		Cluster: name, Hash: pullHash, Host: r.HostConfig, Client: r.Client, Reader: r.Client,
		Options: r.Session, Initial: initialPullHealth(mc), Notify: r.notifier(name),
	}
	s, err := r.Pool.Add(name, func(h member.Handlers) (member.Member, error) {
		return pull.Start(ctrl.LoggerInto(context.Background(), logger), cfg, h)
	})
	if err != nil {
		return member.Snapshot{}, err
	}
	logger.Info("Started pull session", "namespace", v1alpha1.ClusterNamespace(name))
	return s.Snapshot(), nil
}

// notifier returns the function a session calls when what it knows of
// cluster name changed: it queues the MemberCluster.
func (r *Reconciler) notifier(name string) func(context.Context) {
	return func(ctx context.Context) {
		ev := event.GenericEvent{Object: &v1alpha1.MemberCluster{}}
		ev.Object.SetName(name)
		select {
		case r.events <- ev:
		case <-ctx.Done():
		}
	}
}
