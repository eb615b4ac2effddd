package propagate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
)

// suspendedMessage is each cluster's message while the object is
// suspended.
const suspendedMessage = "federation suspended (" + v1alpha1.AnnotationSuspend + `: "true" on the host object): the copy is neither written nor deleted; member-side edits are kept until it resumes`

// suspend is the pass of a suspended object: nothing is written to or
// deleted from a member, so that member-side edits made in an emergency
// stay; pull members' agents are told the same (member.Member.Suspend).
// Every cluster with a copy or a place is reported Suspended, keeping
// what was recorded of it (an evicted copy's LeftAt), and the Propagated
// condition says why. Removing the annotation brings the normal pass
// back, which applies the federation's fields again.
func (r *Reconciler) suspend(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured, env *environment) (reconcile.Result, error) {
	prev := map[string]v1alpha1.ClusterPropagationStatus{}
	var clusters []string
	for _, c := range fo.Status.Clusters {
		prev[c.Cluster] = c
		clusters = append(clusters, c.Cluster)
	}
	for _, p := range fo.Placement() {
		if _, ok := prev[p.Cluster]; !ok {
			clusters = append(clusters, p.Cluster)
		}
	}
	slices.Sort(clusters)
	var problems []string
	st := v1alpha1.FederatedObjectStatus{ObservedGeneration: fo.Generation}
	for _, c := range clusters {
		cs := prev[c]
		cs.Cluster, cs.Reason, cs.Message = c, v1alpha1.PropagationSuspended, suspendedMessage
		if err := r.suspendCopy(ctx, tmpl, env.clusters[c], c); err != nil {
			cs.Message += "; " + err.Error()
			problems = append(problems, c+": "+err.Error())
		}
		st.Clusters = append(st.Clusters, cs)
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionPropagated, Status: metav1.ConditionFalse, Reason: string(v1alpha1.PropagationSuspended), ObservedGeneration: fo.Generation,
		Message: fmt.Sprintf("federation suspended by %s on the host object: the copies in %d clusters are left as the members hold them; remove the annotation to resume", v1alpha1.AnnotationSuspend, len(clusters))}
	if len(problems) > 0 {
		cond.Message += "; " + strings.Join(problems, "; ")
	}
	st.Conditions = []metav1.Condition{fedobj.Condition(fo.Status, cond)}
	if c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionPropagated); c == nil || c.Reason != cond.Reason {
		r.event(tmpl, corev1.EventTypeNormal, string(v1alpha1.PropagationSuspended), "Suspend", cond.Message)
	}
	if err := r.writeStatus(ctx, fo, st); err != nil {
		return reconcile.Result{}, err
	}
	if len(problems) > 0 {
		return reconcile.Result{RequeueAfter: retryAfter}, nil
	}
	return reconcile.Result{}, nil
}

// suspendCopy tells one cluster's member that the copy is suspended
// (only a pull member's agent needs telling). A cluster that is not
// usable has nothing that could revert its copy now; it is told when it
// is back.
func (r *Reconciler) suspendCopy(ctx context.Context, tmpl *unstructured.Unstructured, mc *v1alpha1.MemberCluster, name string) error {
	sess, _ := r.session(mc, name)
	if sess == nil {
		return nil
	}
	gvr, _, err := sess.Resource(tmpl.GroupVersionKind())
	if err != nil {
		return nil // the member does not serve the kind: it holds no copy
	}
	sess.WaitManaged(ctx, gvr)
	if err := sess.Suspend(ctx, gvr, tmpl.GetNamespace(), tmpl.GetName()); err != nil {
		return fmt.Errorf("tell the agent: %w", err)
	}
	return nil
}
