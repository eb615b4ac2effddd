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

// freeze is a pass that writes nothing to and deletes nothing from the
// members: what it is for and how it is reported.
type freeze struct {
	// reason is each cluster's state and the Propagated condition's reason.
	reason v1alpha1.PropagationReason
	// clusterMessage is each cluster's message.
	clusterMessage string
	// conditionMessage is the Propagated condition's message; %d is the
	// number of clusters.
	conditionMessage string
	// action is the event's action; "" records no event.
	action string
	// tellAgents says whether pull members' agents are told to stop
	// correcting their copies too.
	tellAgents bool
}

// suspended is the freeze of an object annotated flotilla.io/suspend.
var suspended = freeze{
	reason:           v1alpha1.PropagationSuspended,
	clusterMessage:   "federation suspended (" + v1alpha1.AnnotationSuspend + `: "true" on the host object): the copy is neither written nor deleted; member-side edits are kept until it resumes`,
	conditionMessage: "federation suspended by " + v1alpha1.AnnotationSuspend + " on the host object: the copies in %d clusters are left as the members hold them; remove the annotation to resume",
	action:           "Suspend",
	tellAgents:       true,
}

// namespaceDeleting is the freeze of an object whose namespace is being
// deleted. The namespace controller deletes the namespace's policies in
// no particular order, before or after this FederatedObject: a normal
// pass in between would strip the namespace's overrides from copies that
// stay (a workload protected from deletion, or one that keeps its copies).
var namespaceDeleting = freeze{
	reason:           v1alpha1.PropagationNamespaceDeleting,
	clusterMessage:   "the host object's namespace is being deleted: the copy is neither written nor deleted until the host object goes",
	conditionMessage: "the host object's namespace is being deleted: the copies in %d clusters are left as they are until the host object goes, whose deletion decides about them",
	// No event: the host refuses new objects, events included, in a
	// namespace being deleted.
}

// suspend is the pass of a suspended object (or of one whose namespace is
// being deleted, as f says): nothing is written to or deleted from a
// member, so that member-side edits made in an emergency stay; pull
// members' agents are told the same when f asks (member.Member.Suspend).
// Every cluster with a copy or a place is reported with f's reason,
// keeping what was recorded of it (an evicted copy's LeftAt), and the
// Propagated condition says why. The end of the freeze brings the normal
// pass back, which applies the federation's fields again.
func (r *Reconciler) suspend(ctx context.Context, fo *v1alpha1.FederatedObject, tmpl *unstructured.Unstructured, env *environment, f freeze) (reconcile.Result, error) {
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
		cs.Cluster, cs.Reason, cs.Message = c, f.reason, f.clusterMessage
		if f.tellAgents {
			if err := r.suspendCopy(ctx, tmpl, env.clusters[c], c); err != nil {
				cs.Message += "; " + err.Error()
				problems = append(problems, c+": "+err.Error())
			}
		}
		st.Clusters = append(st.Clusters, cs)
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionPropagated, Status: metav1.ConditionFalse, Reason: string(f.reason), ObservedGeneration: fo.Generation,
		Message: fmt.Sprintf(f.conditionMessage, len(clusters))}
	if len(problems) > 0 {
		cond.Message += "; " + strings.Join(problems, "; ")
	}
	st.Conditions = []metav1.Condition{fedobj.Condition(fo.Status, cond)}
	if c := meta.FindStatusCondition(fo.Status.Conditions, v1alpha1.ConditionPropagated); f.action != "" && (c == nil || c.Reason != cond.Reason) {
		r.event(tmpl, corev1.EventTypeNormal, string(f.reason), f.action, cond.Message)
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
