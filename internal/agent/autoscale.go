package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/pull"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// UsageReporter reports, for each intent whose spec.autoscale is set (a
// federated HPA scales its object), the usage of the object's pods and
// the member's own HPAs of it into status.autoscale every Interval, and
// deletes the member HPAs the federated HPA took over. The hub reads the
// report instead of the member's metrics API, which it cannot reach.
type UsageReporter struct {
	// Hub reads the intents (cached) and patches their status.
	Hub client.Client
	// Cluster is the MemberCluster's name.
	Cluster string
	// Pool holds the session to the member.
	Pool *member.Pool
	// Interval overrides pull.AgentUsageInterval.
	Interval time.Duration
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
}

// SetupWithManager registers the reporter with mgr.
func (r *UsageReporter) SetupWithManager(mgr ctrl.Manager) error {
	asked := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return wantsUsage(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return wantsUsage(e.ObjectNew) && e.ObjectNew.GetGeneration() != e.ObjectOld.GetGeneration()
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("usage").
		For(&v1alpha1.ClusterIntent{}, builder.WithPredicates(asked)).
		// One agent per process in production; tests run several.
		WithOptions(controller.Options{MaxConcurrentReconciles: 2, SkipNameValidation: ptr.To(true)}).
		Complete(r)
}

func wantsUsage(o client.Object) bool {
	ci, ok := o.(*v1alpha1.ClusterIntent)
	return ok && ci.Spec.Autoscale != nil
}

// Reconcile reports on one intent and looks again after the interval.
func (r *UsageReporter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ci := &v1alpha1.ClusterIntent{}
	if err := r.Hub.Get(ctx, req.NamespacedName, ci); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ci.Spec.Autoscale == nil || !ci.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil // no longer asked: the next ask starts again
	}
	sess := r.Pool.Get(r.Cluster)
	if sess == nil {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	st, err := r.observe(ctx, sess, ci)
	if err != nil {
		return reconcile.Result{}, err
	}
	if ci.Status.Autoscale == nil || !sameReport(*ci.Status.Autoscale, st) || r.now().Sub(ci.Status.Autoscale.Time.Time) >= r.interval() {
		body, err := replacePatch(st)
		if err != nil {
			return reconcile.Result{}, err
		}
		if err := r.Hub.Status().Patch(ctx, ci, client.RawPatch(types.MergePatchType, body)); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("report usage on intent %s: %w", ci.Name, err)
		}
	}
	return reconcile.Result{RequeueAfter: r.interval()}, nil
}

// observe reads the member: the object's HPAs (deleting those the hub
// took over) and its pods' usage.
func (r *UsageReporter) observe(ctx context.Context, sess member.Member, ci *v1alpha1.ClusterIntent) (v1alpha1.IntentAutoscaleStatus, error) {
	st := v1alpha1.IntentAutoscaleStatus{Time: metav1.NewTime(r.now())}
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(ci.Spec.Object.Raw, &obj.Object); err != nil {
		st.Error = fmt.Sprintf("decode the intended object: %v", err)
		return st, nil
	}
	res := ci.Spec.Resource
	w := member.Workload{GVR: schema.GroupVersionResource{Group: res.Group, Version: res.Version, Resource: res.Resource}, Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if sel, ok := workload.PodSelector(obj); ok {
		w.Selector = sel
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	hpas, err := sess.Autoscalers(cctx, w)
	if err != nil {
		return st, fmt.Errorf("intent %s: %w", ci.Name, err)
	}
	var removed []string
	for _, h := range hpas {
		if !h.Managed && slices.Contains(ci.Spec.Autoscale.Remove, h.Name) {
			removed = append(removed, h.Name)
			continue
		}
		st.Autoscalers = append(st.Autoscalers, h)
	}
	if len(removed) > 0 {
		if err := sess.RemoveAutoscalers(cctx, w, removed); err != nil {
			return st, fmt.Errorf("intent %s: %w", ci.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Deleted member HPAs a federated HPA took over", "object", describe(obj), "hpas", removed)
	}
	usage, err := sess.PodUsage(cctx, w)
	if err != nil {
		st.Error = err.Error()
		return st, nil
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if u, ok := usage[name]; ok {
			st.Usage = append(st.Usage, v1alpha1.ResourceUsage{Resource: string(name), Ready: u.Ready, Unready: u.Unready, Missing: u.Missing, Used: u.Used})
		}
	}
	return st, nil
}

// replacePatch is a merge patch that replaces status.autoscale with st:
// the fields st leaves empty are nulled, or a merge would keep them.
func replacePatch(st v1alpha1.IntentAutoscaleStatus) ([]byte, error) {
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	for _, k := range []string{"usage", "autoscalers", "error"} {
		if _, ok := m[k]; !ok {
			m[k] = nil
		}
	}
	return json.Marshal(map[string]any{"status": map[string]any{"autoscale": m}})
}

// sameReport compares two reports but for their time.
func sameReport(a, b v1alpha1.IntentAutoscaleStatus) bool {
	a.Time, b.Time = metav1.Time{}, metav1.Time{}
	return equality.Semantic.DeepEqual(a, b)
}

func (r *UsageReporter) interval() time.Duration {
	if r.Interval > 0 {
		return r.Interval
	}
	return pull.AgentUsageInterval
}

func (r *UsageReporter) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
