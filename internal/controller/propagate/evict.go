package propagate

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/copies"
	"github.com/flotilla-io/flotilla/internal/templates"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// Graceful eviction: when a cluster leaves a workload's placement (a
// NoExecute taint, a drain, a move by the scheduler), its copy keeps
// running until the replicas that replace it are Ready in the clusters
// still placed or, once the policy's graceful eviction period has passed,
// until at least one of them is. Only then is it deleted (when the cluster
// answers). The copy is not counted in the host object's status meanwhile.
// A copy is never deleted while nothing replaces it: no cluster is placed
// (unless the object may lose every cluster), no placed cluster holds a
// copy yet, or, for a workload whose readiness Flotilla reads, none of the
// replacement replicas is Ready. Only a cluster drained with --force lets
// its copies go regardless.

// replacements is what the clusters still placed offer in place of a copy
// that left.
type replacements struct {
	// placed is the number of clusters in the placement; applied, those
	// whose copy is written (status OK).
	placed, applied int
	// measurable is true for kinds whose readiness Flotilla reads; want is
	// the replicas the placed clusters are meant to run, ready how many of
	// those are Ready.
	measurable  bool
	ready, want int64
	// copies: want and ready count healthy copies (a kind whose
	// interpreter judges a copy's health but knows no ready replicas),
	// not replicas.
	copies bool
}

// unit is what want and ready count.
func (r replacements) unit() string {
	if r.copies {
		return "copies"
	}
	return "replicas"
}

// replacements counts the replicas the placed clusters are meant to run
// and how many of those are Ready, from the member caches, and the placed
// clusters that hold a copy (from this pass's results).
func (r *Reconciler) replacements(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured, env *environment, placed []result) replacements {
	rep := replacements{placed: len(fo.Placement())}
	for _, res := range placed {
		if res.status.Reason == v1alpha1.PropagationOK {
			rep.applied++
		}
	}
	total, ok := workload.Replicas(tmpl)
	byReplicas := ok && workload.Migratable(tmpl)
	if !byReplicas && !workload.JudgesReadiness(tmpl) {
		return rep
	}
	kind, ok := r.Templates.Lookup(templates.KeyOf(tmpl).GroupKind())
	if !ok {
		return rep
	}
	rep.measurable, rep.copies = true, !byReplicas
	for _, p := range fo.Placement() {
		if rep.copies {
			rep.want++
			c := copies.Of(ctx, r.Pool, env.clusters[p.Cluster], p.Cluster, kind.GVR, tmpl.GetNamespace(), tmpl.GetName())
			if c.Known() && c.Live != nil && workload.Ready(c.Live) {
				rep.ready++
			}
			continue
		}
		n := int64(total)
		if p.Replicas != nil {
			n = int64(*p.Replicas)
		}
		rep.want += n
		c := copies.Of(ctx, r.Pool, env.clusters[p.Cluster], p.Cluster, kind.GVR, tmpl.GetNamespace(), tmpl.GetName())
		if !c.Known() || c.Live == nil {
			continue
		}
		if got, ok := workload.ReadyReplicas(c.Live); ok {
			rep.ready += min(int64(got), n)
		}
	}
	return rep
}

// eviction is what to do with the copy in a cluster that left.
type eviction struct {
	// keep: wait for the replacements (until deadline, when the decision
	// is taken again).
	keep     bool
	deadline time.Time
	// blocked: the copy stays because nothing replaces it.
	blocked bool
	// replaced: the replacements are Ready (else the period ran out, or
	// there was nothing to wait for).
	replaced bool
	message  string
}

// evictionInput is what decideEviction decides from.
type evictionInput struct {
	now, leftAt time.Time
	// period is the policy's graceful eviction period.
	period time.Duration
	rep    replacements
	// allowEmpty: the object may lose every cluster (emptyPlacement:
	// Allow, or a follower whose workloads left).
	allowEmpty bool
	// forced: the cluster was drained with --force.
	forced bool
}

// decideEviction decides whether a copy that left the placement may go.
func decideEviction(in evictionInput) eviction {
	rep := in.rep
	blocked := func(why string) eviction {
		return eviction{keep: true, blocked: true, deadline: in.now.Add(evictionRecheck), message: why}
	}
	deadline := in.leftAt.Add(in.period)
	// A drain with --force lets go what would otherwise stay for good (no
	// other cluster takes the object, or none runs it by the end of the
	// period); a copy that has somewhere to go still moves gracefully.
	switch {
	case rep.placed == 0 && in.allowEmpty:
		return eviction{message: "the object is placed on no cluster"}
	case rep.placed == 0 && in.forced:
		return eviction{message: "the cluster was drained with --force and no other cluster takes the object"}
	case rep.placed == 0:
		return blocked(fmt.Sprintf("no cluster is placed: the copy keeps running, since Flotilla never deletes the last copy of an object (set placement.emptyPlacement: Allow or the annotation %s: allow to let it go)", v1alpha1.AnnotationEmptyPlacement))
	case rep.applied == 0 && in.forced && !in.now.Before(deadline):
		return eviction{message: fmt.Sprintf("the cluster was drained with --force and the graceful eviction period (%s) passed with none of the %d placed clusters holding a copy", in.period, rep.placed)}
	case rep.applied == 0 && in.forced:
		return eviction{keep: true, deadline: deadline, message: fmt.Sprintf("the cluster was drained with --force; its copy keeps running, not counted, until one of the %d placed clusters holds a copy, at most until %s", rep.placed, deadline.UTC().Format(time.RFC3339))}
	case rep.applied == 0:
		return blocked(fmt.Sprintf("none of the %d placed clusters holds a copy yet: the copy keeps running, not counted, until one does", rep.placed))
	case !rep.measurable || in.period <= 0:
		return eviction{message: fmt.Sprintf("%d/%d placed clusters hold a copy", rep.applied, rep.placed)}
	case rep.ready >= rep.want:
		return eviction{replaced: true, message: fmt.Sprintf("the %d replacement %s are Ready", rep.want, rep.unit())}
	case !in.now.Before(deadline) && rep.ready > 0:
		return eviction{message: fmt.Sprintf("the graceful eviction period (%s) passed with %d/%d replacement %s Ready", in.period, rep.ready, rep.want, rep.unit())}
	case !in.now.Before(deadline) && in.forced:
		return eviction{message: fmt.Sprintf("the cluster was drained with --force and the graceful eviction period (%s) passed with none of the %d replacement %s Ready", in.period, rep.want, rep.unit())}
	case !in.now.Before(deadline):
		return blocked(fmt.Sprintf("the graceful eviction period (%s) passed but none of the %d replacement %s is Ready: the copy keeps running, not counted, until one is", in.period, rep.want, rep.unit()))
	}
	return eviction{keep: true, deadline: deadline, message: fmt.Sprintf("the cluster left the placement; its copy keeps running, not counted, until the replacement %s are Ready in the other clusters (%d/%d now), at most until %s", rep.unit(), rep.ready, rep.want, deadline.UTC().Format(time.RFC3339))}
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

// keepsOnMove reports whether a copy stays in a cluster that leaves the
// placement: a PersistentVolumeClaim (a move never deletes data) and a
// Namespace (deleting one deletes everything in it, in that cluster: the
// copies of other objects still waiting for their replacements, those
// placed there by other policies, data, and what Flotilla never wrote)
// unless the annotation flotilla.io/keep-on-move says "false"; any object
// whose annotation says "true".
func keepsOnMove(tmpl *unstructured.Unstructured) bool {
	if tmpl == nil {
		return false
	}
	switch tmpl.GetAnnotations()[v1alpha1.AnnotationKeepOnMove] {
	case "true":
		return true
	case "false":
		return false
	}
	gvk := tmpl.GroupVersionKind()
	return gvk.Group == "" && (gvk.Kind == "PersistentVolumeClaim" || gvk.Kind == "Namespace")
}

// retain keeps the copy in a cluster that left the placement, no longer
// updated (see keepsOnMove); a cluster that left the federation is
// forgotten.
func retain(mc *v1alpha1.MemberCluster, prev v1alpha1.ClusterPropagationStatus) result {
	if mc == nil {
		return result{status: prev, drop: true}
	}
	st := prev
	st.Reason = v1alpha1.PropagationRetained
	st.Message = "the cluster left the placement; the copy stays there, no longer updated, and is deleted with the object (" + v1alpha1.AnnotationKeepOnMove + `: "false" deletes it now)`
	return result{status: st}
}
