package propagate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/copies"
	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/policy"
	"github.com/flotilla-io/flotilla/internal/render"
	"github.com/flotilla-io/flotilla/internal/rollout"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// syncCluster brings one cluster's copy up to date. The write runs as a
// flight: when the member takes longer than the wait budget, the previous
// state is reported as Pending and the FederatedObject is woken when the
// write ends.
func (r *Reconciler) syncCluster(ctx context.Context, fo types.NamespacedName, tmpl *unstructured.Unstructured, p v1alpha1.ClusterPlacement, env *environment, prev v1alpha1.ClusterPropagationStatus) result {
	st := v1alpha1.ClusterPropagationStatus{Cluster: p.Cluster, TemplateGeneration: prev.TemplateGeneration}
	fail := func(reason v1alpha1.PropagationReason, msg string) result {
		st.Reason, st.Message = reason, msg
		return result{status: st}
	}
	mc := env.clusters[p.Cluster]
	sess, why := r.session(mc, p.Cluster)
	if sess == nil && why == noSessionYet {
		// Ready, but its session is starting (a controller restart): keep
		// what was recorded and come back shortly.
		if prev.Reason != "" {
			return result{status: prev, pending: true}
		}
		res := fail(v1alpha1.PropagationPending, why)
		res.pending = true
		return res
	}
	if sess == nil {
		return fail(v1alpha1.PropagationClusterNotReady, why)
	}
	// Rendering keeps the template's kind, so its member resource is the
	// copy's.
	gvr, _, err := sess.Resource(tmpl.GroupVersionKind())
	if err != nil {
		return fail(v1alpha1.PropagationApplyFailed, err.Error())
	}
	// Before rendering: a member cache that is listing (after a start) is
	// waited for here, not met by a render and a requeue.
	sess.WaitManaged(ctx, gvr)
	rin := render.Input{Template: tmpl, Placement: p, Overrides: policy.Overrides(tmpl, mc, env.cops, env.ops)}
	switch {
	case env.governed:
		// A federated rollout: whether the member holds a copy, and of
		// which revision, decides whether it is held (a copy the cache
		// does not know for sure counts as held by the plan).
		live, state := sess.ManagedObject(gvr, tmpl.GetNamespace(), tmpl.GetName())
		copyRevision := ""
		if live != nil {
			copyRevision = live.GetLabels()[v1alpha1.LabelRevision]
		}
		if rollout.Deferred(env.rollout, env.revision, p.Cluster, live != nil && state == member.CacheSynced, copyRevision) {
			// The plan of the new revision is on its way (its write wakes
			// the object): the copy stays as it is meanwhile.
			res := result{status: prev, pending: true}
			if prev.Reason == "" {
				res.status = v1alpha1.ClusterPropagationStatus{Cluster: p.Cluster, Reason: v1alpha1.PropagationPending, Message: "waiting for the rollout plan of the new template"}
			}
			return res
		}
		d := rollout.For(env.rollout, env.revision, p.Cluster, live != nil || state != member.CacheSynced, copyRevision)
		rin.Rollout = &d
	case env.revision != "":
		// Labelled with its revision all the same, so that a rollout
		// federated later knows what each copy holds.
		rin.Rollout = &rollout.Directive{Revision: env.revision}
	}
	desired, err := render.Render(rin)
	if err != nil {
		return fail(v1alpha1.PropagationApplyFailed, "render: "+err.Error())
	}
	in, err := dispatch.Take(desired) // rendered for this pass: no copy
	if err != nil {
		return fail(v1alpha1.PropagationApplyFailed, err.Error())
	}
	opts := dispatch.Options{Adopt: env.adopt, KeepLive: workload.Retained(tmpl)}
	if render.RetainsReplicas(tmpl) {
		opts.KeepLive = append(slices.Clip(opts.KeepLive), workload.ReplicasPath(tmpl))
	}
	if workload.IsJob(tmpl.GroupVersionKind().GroupKind()) && jobStarted(sess, gvr, tmpl) {
		// A started Job's pod template cannot change in the member: an
		// override changed since does not reach it (a write would be
		// refused on every pass). A suspended Job that never started still
		// takes changes of its scheduling directives, as in Kubernetes.
		opts.KeepLive = append(slices.Clip(opts.KeepLive), []string{"spec", "template"})
	}
	job := func() result {
		res := result{status: st}
		outcome, err := r.apply(sess, gvr, in, opts)
		switch {
		case errors.Is(err, member.ErrCacheSyncing):
			res.status, res.pending = prev, true
			if prev.Reason == "" {
				res.status.Cluster, res.status.Reason, res.status.Message = p.Cluster, v1alpha1.PropagationPending, err.Error()
			}
		case errors.Is(err, member.ErrAwaitingAgent):
			// A pull member: the agent's report wakes the object (an event
			// of the intent), so there is nothing to poll for.
			res.status.Reason, res.status.Message = v1alpha1.PropagationPending, err.Error()
		case errors.Is(err, dispatch.ErrConflict):
			res.status.Reason, res.status.Message = v1alpha1.PropagationConflict, err.Error()+"; "+env.conflictHint
		case err != nil:
			res.status.Reason, res.status.Message = v1alpha1.PropagationApplyFailed, err.Error()
		default:
			res.status.Reason, res.status.TemplateGeneration = v1alpha1.PropagationOK, tmpl.GetGeneration()
			if outcome != dispatch.Unchanged {
				res.outcome = string(outcome)
			}
		}
		return res
	}
	what := fmt.Sprintf("%s|generation=%d", intent(in, opts), tmpl.GetGeneration())
	if res, done := r.flights.run(flightKey{fo: fo, cluster: p.Cluster}, what, r.waitBudget(), job, r.wake(fo)); done {
		return res
	}
	return r.inFlight(prev, p.Cluster)
}

// apply writes in, a copy of the member resource gvr, into one member
// (push: dispatch creates its namespace if needed; pull: the agent does).
func (r *Reconciler) apply(sess member.Member, gvr schema.GroupVersionResource, in *dispatch.Intent, opts dispatch.Options) (dispatch.Outcome, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.applyTimeout())
	defer cancel()
	return sess.Apply(ctx, gvr, in, opts)
}

// intent identifies what a write of in with opts would make the member
// hold, so that a finished write is recognised as current: the prepared
// object's hash (computed once, by dispatch.Prepare) and the options.
// syncCluster adds the template's generation, which a result records
// (templateGeneration): a write of an older generation that renders the
// same copy (a scale that has not been divided anew yet) is not current.
func intent(in *dispatch.Intent, opts dispatch.Options) string {
	return fmt.Sprintf("%s|adopt=%v|keep=%v", in.Hash, opts.Adopt, opts.KeepLive)
}

// inFlight is the state reported while a write is still running.
func (r *Reconciler) inFlight(prev v1alpha1.ClusterPropagationStatus, cluster string) result {
	if prev.Reason != "" {
		return result{status: prev, inFlight: true}
	}
	return result{status: v1alpha1.ClusterPropagationStatus{Cluster: cluster, Reason: v1alpha1.PropagationPending, Message: "the member has not answered yet"}, inFlight: true}
}

// noSessionYet is why a Ready cluster has no session: the cluster
// controller has not started it yet.
const noSessionYet = copies.NoSessionYet

// session returns the member's session when the cluster is usable (see
// copies.Usable), or why not. A usable cluster without a session (the
// cluster controller starting it) is noSessionYet for sessionGrace, then
// not Ready.
func (r *Reconciler) session(mc *v1alpha1.MemberCluster, name string) (member.Member, string) {
	c := copies.Session(r.Pool, mc, name)
	switch {
	case c.Session != nil:
		r.missing.Delete(name)
		return c.Session, ""
	case !c.Starting():
		return nil, c.Why
	}
	since, _ := r.missing.LoadOrStore(name, time.Now())
	if time.Since(since.(time.Time)) > sessionGrace {
		return nil, "no connection to the cluster: the cluster controller has not connected to it (is it enabled and running?)"
	}
	return nil, noSessionYet
}

// sessionGrace is how long a Ready cluster may lack a session before its
// copies count as not Ready.
const sessionGrace = 30 * time.Second

// evict keeps the copy in a cluster that left the placement while ev says
// so, and deletes it after (see deleteCopy).
func (r *Reconciler) evict(fo *v1alpha1.FederatedObject, mc *v1alpha1.MemberCluster, prev v1alpha1.ClusterPropagationStatus, ev eviction) result {
	if mc == nil {
		return result{status: prev, drop: true} // the cluster left the federation
	}
	if ev.keep {
		st := prev
		st.Reason, st.Message = v1alpha1.PropagationEvicting, ev.message
		return result{status: st, keepUntil: ev.deadline}
	}
	if ev.replaced && prev.LeftAt != nil && prev.Reason == v1alpha1.PropagationEvicting {
		evictionSeconds.WithLabelValues("replaced").Observe(time.Since(prev.LeftAt.Time).Seconds())
	} else if ev.message != "" && prev.Reason == v1alpha1.PropagationEvicting {
		evictionSeconds.WithLabelValues("timeout").Observe(time.Since(prev.LeftAt.Time).Seconds())
	}
	return r.deleteCopy(fo, mc, prev, ev.message)
}

// deleteCopy deletes the copy in a cluster that left the placement, as a
// flight (see syncCluster). why, when set, says why now.
func (r *Reconciler) deleteCopy(fo *v1alpha1.FederatedObject, mc *v1alpha1.MemberCluster, prev v1alpha1.ClusterPropagationStatus, why string) result {
	st := prev
	st.Reason = v1alpha1.PropagationDeleting
	st.Message = why
	sess, notReady := r.session(mc, prev.Cluster)
	if notReady == noSessionYet {
		return result{status: prev, pending: true}
	}
	if sess == nil {
		st.Message = "the copy will be deleted when the cluster is Ready: " + notReady
		if why != "" {
			st.Message = why + "; " + st.Message
		}
		return result{status: st}
	}
	key := types.NamespacedName{Namespace: fo.Namespace, Name: fo.Name}
	job := func() result {
		outcome, err := r.delete(sess, fo)
		switch {
		case errors.Is(err, dispatch.ErrConflict):
			return result{status: st, drop: true} // no longer ours: leave it
		case err != nil:
			res := result{status: st}
			res.status.Message = err.Error()
			return res
		}
		res := result{status: st, drop: true}
		if outcome == dispatch.Deleted {
			res.outcome = string(outcome)
		}
		return res
	}
	if res, done := r.flights.run(flightKey{fo: key, cluster: prev.Cluster}, "delete", r.waitBudget(), job, r.wake(key)); done {
		return res
	}
	return result{status: st, inFlight: true}
}

// delete deletes a FederatedObject's copy from one member.
func (r *Reconciler) delete(sess member.Member, fo *v1alpha1.FederatedObject) (dispatch.Outcome, error) {
	ref := fo.Spec.Template
	ctx, cancel := context.WithTimeout(context.Background(), r.applyTimeout())
	defer cancel()
	return sess.Delete(ctx, schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind), ref.Namespace, ref.Name)
}

// jobStarted reports whether the member's copy of a Job has started
// (status.startTime, which the projection's status carries).
func jobStarted(sess member.Member, gvr schema.GroupVersionResource, tmpl *unstructured.Unstructured) bool {
	live, _ := sess.ManagedObject(gvr, tmpl.GetNamespace(), tmpl.GetName())
	if live == nil {
		return false
	}
	_, started, _ := unstructured.NestedFieldNoCopy(live.Object, "status", "startTime")
	return started
}
