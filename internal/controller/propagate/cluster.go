package propagate

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/policy"
	"github.com/flotilla-io/flotilla/internal/render"
)

// syncCluster brings one cluster's copy up to date.
func (r *Reconciler) syncCluster(ctx context.Context, tmpl *unstructured.Unstructured, p v1alpha1.ClusterPlacement, env *environment, prev v1alpha1.ClusterPropagationStatus) result {
	st := v1alpha1.ClusterPropagationStatus{Cluster: p.Cluster, TemplateGeneration: prev.TemplateGeneration}
	fail := func(reason v1alpha1.PropagationReason, msg string) result {
		st.Reason, st.Message = reason, msg
		return result{status: st}
	}
	mc := env.clusters[p.Cluster]
	sess, why := r.session(mc, p.Cluster)
	if sess == nil && why == noSessionYet && prev.Reason != "" {
		// Ready, but its session is starting (a controller restart): keep
		// what was recorded and come back shortly.
		return result{status: prev, pending: true}
	}
	if sess == nil {
		res := fail(v1alpha1.PropagationClusterNotReady, why)
		res.pending = why == noSessionYet
		return res
	}
	desired, err := render.Render(render.Input{Template: tmpl, Placement: p, Overrides: policy.Overrides(tmpl, mc, env.cops, env.ops)})
	if err != nil {
		return fail(v1alpha1.PropagationApplyFailed, "render: "+err.Error())
	}
	gvr, _, err := dispatch.Resource(sess.Mapper(), desired.GroupVersionKind())
	if err != nil {
		return fail(v1alpha1.PropagationApplyFailed, err.Error())
	}
	opts := dispatch.Options{Adopt: env.adopt}
	if render.RetainsReplicas(tmpl) {
		opts.KeepLive = [][]string{{"spec", "replicas"}}
	}
	if live, synced := sess.ManagedObject(gvr, desired.GetNamespace(), desired.GetName()); synced && live != nil {
		opts.Live = live
	}
	applier := &dispatch.Applier{Client: sess.Dynamic(), Mapper: sess.Mapper()}
	ctx, cancel := context.WithTimeout(ctx, r.applyTimeout())
	defer cancel()
	outcome, err := applier.Apply(ctx, desired, opts)
	if err != nil && missingNamespace(err) {
		if err = r.ensureNamespace(ctx, applier, desired.GetNamespace()); err == nil {
			outcome, err = applier.Apply(ctx, desired, opts)
		}
	}
	switch {
	case errors.Is(err, dispatch.ErrConflict):
		return fail(v1alpha1.PropagationConflict, err.Error()+"; set the annotation "+v1alpha1.AnnotationConflictResolution+": adopt (or conflictResolution: Adopt in the policy) to take it over")
	case err != nil:
		return fail(v1alpha1.PropagationApplyFailed, err.Error())
	}
	st.Reason, st.TemplateGeneration = v1alpha1.PropagationOK, tmpl.GetGeneration()
	res := result{status: st}
	if outcome != dispatch.Unchanged {
		res.outcome = string(outcome)
	}
	return res
}

// noSessionYet is why a Ready cluster has no session: the cluster
// controller has not started it yet.
const noSessionYet = "no connection to the cluster yet"

// session returns the member's session when the cluster is Ready, or why
// not.
func (r *Reconciler) session(mc *v1alpha1.MemberCluster, name string) (*member.Session, string) {
	if mc == nil {
		return nil, fmt.Sprintf("MemberCluster %s does not exist", name)
	}
	if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		msg := "the cluster is not Ready"
		if c != nil {
			msg += fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
		}
		return nil, msg
	}
	sess := r.Pool.Get(name)
	if sess == nil {
		return nil, noSessionYet
	}
	return sess, ""
}

// deleteCopy deletes the copy in a cluster that left the placement.
func (r *Reconciler) deleteCopy(ctx context.Context, fo *v1alpha1.FederatedObject, mc *v1alpha1.MemberCluster, prev v1alpha1.ClusterPropagationStatus) result {
	st := prev
	st.Reason = v1alpha1.PropagationDeleting
	if mc == nil {
		return result{status: st, drop: true} // the cluster left the federation
	}
	sess, why := r.session(mc, prev.Cluster)
	if why == noSessionYet {
		return result{status: prev, pending: true}
	}
	if sess == nil {
		st.Message = "the copy will be deleted when the cluster is Ready: " + why
		return result{status: st}
	}
	outcome, err := r.delete(ctx, sess, fo)
	switch {
	case errors.Is(err, dispatch.ErrConflict):
		return result{status: st, drop: true} // no longer ours: leave it
	case err != nil:
		st.Message = err.Error()
		return result{status: st}
	}
	res := result{status: st, drop: true}
	if outcome == dispatch.Deleted {
		res.outcome = string(outcome)
	}
	return res
}

// delete deletes a FederatedObject's copy from one member.
func (r *Reconciler) delete(ctx context.Context, sess *member.Session, fo *v1alpha1.FederatedObject) (dispatch.Outcome, error) {
	ref := fo.Spec.Template
	applier := &dispatch.Applier{Client: sess.Dynamic(), Mapper: sess.Mapper()}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ref.APIVersion)
	u.SetKind(ref.Kind)
	ctx, cancel := context.WithTimeout(ctx, r.applyTimeout())
	defer cancel()
	return applier.Delete(ctx, u.GroupVersionKind(), ref.Namespace, ref.Name)
}

// ensureNamespace creates a namespace in a member for the objects it
// receives.
func (r *Reconciler) ensureNamespace(ctx context.Context, applier *dispatch.Applier, name string) error {
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	_, err := applier.Apply(ctx, ns, dispatch.Options{Adopt: true})
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// missingNamespace reports whether an apply failed because the object's
// namespace does not exist in the member.
func missingNamespace(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsNotFound(err) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}
