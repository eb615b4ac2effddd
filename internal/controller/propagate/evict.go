package propagate

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/templates"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// Graceful eviction: when a cluster leaves a workload's placement (a
// NoExecute taint, a drain, a move by the scheduler), its copy keeps
// running until the replicas that replace it are Ready in the clusters
// still placed, or until the policy's graceful eviction period has passed.
// Only then is it deleted (when the cluster answers). The copy is not
// counted in the host object's status meanwhile.

// replacements counts the replicas the placed clusters are meant to run
// and how many of those are Ready, from the member caches. measurable is
// false for kinds whose readiness Flotilla cannot read: their copies are
// deleted at once.
func (r *Reconciler) replacements(fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured, env *environment) (ready, want int64, measurable bool) {
	total, ok := workload.Replicas(tmpl)
	if !ok || !workload.Migratable(tmpl) {
		return 0, 0, false
	}
	kind, ok := r.Templates.Lookup(templates.KeyOf(tmpl).GroupKind())
	if !ok {
		return 0, 0, false
	}
	for _, p := range fo.Spec.Placement {
		n := int64(total)
		if p.Replicas != nil {
			n = int64(*p.Replicas)
		}
		want += n
		sess, _ := r.session(env.clusters[p.Cluster], p.Cluster)
		if sess == nil {
			continue
		}
		live, state := sess.ManagedObject(kind.GVR, tmpl.GetNamespace(), tmpl.GetName())
		if state != member.CacheSynced || live == nil {
			continue
		}
		if got, ok := workload.ReadyReplicas(live); ok {
			ready += min(int64(got), n)
		}
	}
	return ready, want, true
}

// eviction is what to do with the copy in a cluster that left.
type eviction struct {
	// keep: wait for the replacements (until deadline).
	keep     bool
	deadline time.Time
	// replaced: the replacements are Ready (else the period ran out, or
	// there was nothing to wait for).
	replaced bool
	message  string
}

// decideEviction decides whether a copy that left the placement at leftAt
// may go, given the graceful period and the replacements' readiness.
func decideEviction(now, leftAt time.Time, period time.Duration, ready, want int64, measurable bool) eviction {
	deadline := leftAt.Add(period)
	switch {
	case !measurable || period <= 0:
		return eviction{}
	case ready >= want:
		return eviction{replaced: true, message: fmt.Sprintf("the %d replacement replicas are Ready", want)}
	case !now.Before(deadline):
		return eviction{message: fmt.Sprintf("the graceful eviction period (%s) passed with %d/%d replacement replicas Ready", period, ready, want)}
	}
	return eviction{keep: true, deadline: deadline, message: fmt.Sprintf("the cluster left the placement; its copy keeps running, not counted, until the replacement replicas are Ready in the other clusters, at most until %s", deadline.UTC().Format(time.RFC3339))}
}

// gracefulPeriod is the policy's graceful eviction period.
func gracefulPeriod(spec *v1alpha1.PropagationSpec) time.Duration {
	seconds := int32(v1alpha1.DefaultGracefulEvictionSeconds)
	if spec != nil && spec.Failover != nil && spec.Failover.GracefulEvictionSeconds != nil {
		seconds = *spec.Failover.GracefulEvictionSeconds
	}
	return time.Duration(seconds) * time.Second
}

// waitingForReplacements marks (or unmarks) fo as keeping an evicted copy,
// so that status changes of its member copies wake it.
func (r *Reconciler) waitingForReplacements(fo types.NamespacedName, waiting bool) {
	if waiting {
		r.evicting.Store(fo, struct{}{})
	} else {
		r.evicting.Delete(fo)
	}
}
