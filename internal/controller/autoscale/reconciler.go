// Package autoscale is the controller of federated
// HorizontalPodAutoscalers: an autoscaling/v2 HPA on the host that no
// policy propagates, whose target is a workload divided over clusters,
// scales the host object's replicas from resource usage summed over every
// member (internal/autoscale decides), and the scheduler divides the new
// count by the policy. An HPA a policy propagates runs in the members
// instead, as before. The host runs no HPA controller of its own.
package autoscale

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/applied"
	"github.com/flotilla-io/flotilla/internal/autoscale"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/templates"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// Name is the controller's name for --controllers.
const Name = "autoscale"

// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers/status,verbs=patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;replicasets,verbs=patch
// +kubebuilder:rbac:groups=flotilla.io,resources=federatedobjects,verbs=get;list;watch
// +kubebuilder:rbac:groups=flotilla.io,resources=federatedobjects/status,verbs=patch
// +kubebuilder:rbac:groups=flotilla.io,resources=propagationpolicies;clusterpropagationpolicies,verbs=get;list;watch

// DefaultInterval is how often a federated HPA is evaluated (Kubernetes'
// --horizontal-pod-autoscaler-sync-period).
const DefaultInterval = 15 * time.Second

// defaultDownWindow is the default scale-down stabilization window.
const defaultDownWindow = 300 * time.Second

// memberCallTimeout bounds each call to a member (its pods' usage, its
// HPAs): a member that stops answering holds a worker, which the other
// HPAs of every tenant share, no longer than this.
const memberCallTimeout = 10 * time.Second

// creationGrace is how long a new HPA is left alone, so that a policy
// that propagates it is found first.
const creationGrace = 5 * time.Second

// Reconciler evaluates federated HPAs.
type Reconciler struct {
	// Client reads HPAs and FederatedObjects (cached) and writes the
	// targets' replicas and the HPAs' status.
	Client client.Client
	// Templates is the host template cache (the targets).
	Templates *templates.Cache
	// Pool holds the member sessions, which report usage.
	Pool *member.Pool
	// Reader reads a target again, past the cache, when a scale found it
	// written since the cache's copy (Client when nil).
	Reader client.Reader
	// Recorder records events on the HPAs.
	Recorder events.EventRecorder
	// Interval overrides DefaultInterval.
	Interval time.Duration
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time

	mu      sync.Mutex
	history map[types.NamespacedName]history
	since   map[types.NamespacedName]seen
}

// seen is when the take-over of the HPA of that UID first waited for pull
// members' reports (awaited).
type seen struct {
	uid types.UID
	at  time.Time
}

// history is one HPA's recent recommendations and changes (the
// stabilization windows, the scaling policies' periods), for the HPA of
// that UID.
type history struct {
	uid  types.UID
	past autoscale.History
}

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.history = map[types.NamespacedName]history{}
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		// An annotation (flotilla.io/conflict-resolution) may allow a
		// take-over.
		For(&autoscalingv2.HorizontalPodAutoscaler{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// An HPA's own FederatedObject (a policy propagates it, or no
		// longer does) hands it to the members or back.
		Watches(&v1alpha1.FederatedObject{}, handler.EnqueueRequestsFromMapFunc(hpaOfFederatedObject)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// Reconcile evaluates one HPA and looks again after the interval.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := r.Client.Get(ctx, req.NamespacedName, hpa); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !hpa.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	if age := r.now().Sub(hpa.CreationTimestamp.Time); age < creationGrace {
		// The federate controller decides first whether a policy
		// propagates it (then it runs in the members).
		return reconcile.Result{RequeueAfter: creationGrace - age}, nil
	}
	propagated, err := r.federated(ctx, hpa.Namespace, hpa.Name, "HorizontalPodAutoscaler", "autoscaling")
	if err != nil {
		return reconcile.Result{}, err
	}
	if propagated {
		r.forget(req.NamespacedName)
		return reconcile.Result{}, nil // a policy propagates it: it runs in the members
	}
	st, again := r.evaluate(ctx, hpa)
	if err := r.writeStatus(ctx, hpa, st); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: cmp.Or(again, r.Interval, DefaultInterval)}, nil
}

// federated reports whether the host object namespace/name of kind
// group/kind has a FederatedObject (a policy propagates it).
func (r *Reconciler) federated(ctx context.Context, namespace, name, kind, group string) (bool, error) {
	key := templates.Key{Group: group, Kind: kind, Namespace: namespace, Name: name}.FederatedName()
	err := r.Client.Get(ctx, key, &v1alpha1.FederatedObject{}, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// evaluate decides one HPA and scales its target; it returns the status
// to write, and when to look again if sooner than the interval (a
// take-over in progress).
func (r *Reconciler) evaluate(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler) (autoscalingv2.HorizontalPodAutoscalerStatus, time.Duration) {
	st := *hpa.Status.DeepCopy()
	st.ObservedGeneration = &hpa.Generation
	now := r.now()
	fail := func(typ autoscalingv2.HorizontalPodAutoscalerConditionType, reason, msg string) (autoscalingv2.HorizontalPodAutoscalerStatus, time.Duration) {
		if c := findCondition(hpa.Status, typ); c == nil || c.Reason != reason {
			r.event(hpa, corev1.EventTypeWarning, reason, msg) // once per new reason, not every pass
		}
		setCondition(&st, typ, corev1.ConditionFalse, reason, msg, now)
		if typ == autoscalingv2.AbleToScale {
			setCondition(&st, autoscalingv2.ScalingActive, corev1.ConditionFalse, reason, msg, now)
		}
		return st, 0
	}
	ref := hpa.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return fail(autoscalingv2.AbleToScale, "FailedGetScale", fmt.Sprintf("scaleTargetRef.apiVersion %q: %v", ref.APIVersion, err))
	}
	tmpl, err := r.Templates.Get(templates.Key{Group: gv.Group, Kind: ref.Kind, Namespace: hpa.Namespace, Name: ref.Name})
	if err != nil || tmpl == nil {
		return fail(autoscalingv2.AbleToScale, "FailedGetScale", fmt.Sprintf("the target %s %s does not exist on the host", ref.Kind, ref.Name))
	}
	current, ok := workload.Replicas(tmpl)
	if workload.IsJob(tmpl.GroupVersionKind().GroupKind()) {
		ok = false // its completions are work to do, not replicas to scale
	}
	if !ok {
		return fail(autoscalingv2.AbleToScale, "FailedGetScale", fmt.Sprintf("the target %s %s has no replicas to scale", ref.Kind, ref.Name))
	}
	if others, err := r.alsoScaling(ctx, hpa, gv.Group); err != nil {
		return fail(autoscalingv2.AbleToScale, "FailedGetScale", fmt.Sprintf("the other HPAs of namespace %s: %v", hpa.Namespace, err))
	} else if len(others) > 0 {
		// As Kubernetes does when two HPAs select the same pods: neither
		// scales, or each would undo the other's changes in every member.
		if c := findCondition(hpa.Status, autoscalingv2.ScalingActive); c == nil || c.Reason != ReasonAmbiguousSelector {
			r.event(hpa, corev1.EventTypeWarning, ReasonAmbiguousSelector, fmt.Sprintf("HPA %s also scales %s %s", strings.Join(others, ", "), ref.Kind, ref.Name))
		}
		setCondition(&st, autoscalingv2.ScalingActive, corev1.ConditionFalse, ReasonAmbiguousSelector,
			fmt.Sprintf("%s %s is also scaled by HPA %s: each would undo the other's changes in every member; delete all but one", ref.Kind, ref.Name, strings.Join(others, ", ")), now)
		return st, 0
	}
	fo := &v1alpha1.FederatedObject{}
	if err := r.Client.Get(ctx, templates.KeyOf(tmpl).FederatedName(), fo); err != nil || !fedobj.Divided(fo) ||
		fo.Spec.Template.UID != tmpl.GetUID() || !fo.DeletionTimestamp.IsZero() {
		// (A FederatedObject of an earlier object of the same name, not
		// yet gone, is not this target's.)
		return fail(autoscalingv2.AbleToScale, "NotFederated", fmt.Sprintf("the target %s %s is not divided over clusters by a propagation policy (no FederatedObject of this object with a Divide placement; one of an earlier object of the same name does not count): a federated HPA scales only such workloads; propagate the HPA itself to run one in each member", ref.Kind, ref.Name))
	}
	if b, err := r.takeOver(ctx, hpa, tmpl, fo); err != nil || b != nil {
		if err != nil {
			st, _ = fail(autoscalingv2.AbleToScale, "FailedTakeOver", err.Error())
			return st, r.retryTakeOver(hpa, "FailedTakeOver", err.Error(), true)
		}
		if b.warn {
			st, _ = fail(autoscalingv2.AbleToScale, b.reason, b.message)
			return st, 0
		}
		setCondition(&st, autoscalingv2.AbleToScale, corev1.ConditionFalse, b.reason, b.message, now)
		setCondition(&st, autoscalingv2.ScalingActive, corev1.ConditionFalse, b.reason, b.message, now)
		return st, r.retryTakeOver(hpa, b.reason, b.message, b.slow)
	}
	setCondition(&st, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the federated target's replicas can be scaled", now)
	st.CurrentReplicas = current
	if current == 0 {
		setCondition(&st, autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero", now)
		return st, 0
	}

	metrics, current2, problems := r.usage(ctx, hpa, tmpl, fo)
	st.CurrentMetrics = current2
	if !slices.ContainsFunc(metrics, func(m autoscale.Metric) bool { return m.Invalid == "" }) {
		msg := "no resource metric could be read"
		if len(problems) > 0 {
			msg += ": " + joinProblems(problems)
		}
		setCondition(&st, autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric", msg, now)
		if p := policyOf(hpa); current >= p.Min && current <= p.Max {
			return st, 0
		}
		// Replicas outside the bounds go to the bound without metrics,
		// as in Kubernetes.
	} else {
		msg := "the replicas are computed from resource usage summed over every member"
		if len(problems) > 0 {
			msg += "; left out: " + joinProblems(problems)
		}
		setCondition(&st, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound", msg, now)
	}

	step, err := r.downStep(ctx, tmpl)
	if err != nil {
		return fail(autoscalingv2.AbleToScale, "FailedGetScale", err.Error())
	}
	d, undo := r.decide(hpa, metrics, current, step, now)
	st.DesiredReplicas = d.Replicas
	if d.Limited == "min" || d.Limited == "max" || d.Limited == "rate" || d.Limited == "disabled" || d.Limited == "protection" {
		setCondition(&st, autoscalingv2.ScalingLimited, corev1.ConditionTrue, limitReason(d.Limited, d.Down), d.Why, now)
	} else {
		setCondition(&st, autoscalingv2.ScalingLimited, corev1.ConditionFalse, "DesiredWithinRange", d.Why, now)
	}
	if d.Replicas == current {
		return st, 0
	}
	if err := r.scale(ctx, tmpl, d.Replicas); err != nil {
		if apierrors.IsConflict(err) {
			// The target was scaled since the cache read it (by someone
			// else), or deleted and created again: decide again from what
			// it is now, not from the count it had.
			klog.FromContext(ctx).V(1).Info("Target changed before it was scaled; deciding again", "hpa", klog.KObj(hpa), "error", err)
			undo()
			return st, time.Second
		}
		if !applied.Maybe(err) {
			// Refused (scale-down protection, a conflict): the change
			// does not count against the scaling policies' periods. One
			// that may have been made (a timeout) does.
			undo()
		}
		setCondition(&st, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale", err.Error(), now)
		keepTransition(&st, hpa.Status, autoscalingv2.AbleToScale) // set True above in this pass
		r.event(hpa, corev1.EventTypeWarning, "FailedRescale", err.Error())
		return st, 0
	}
	st.CurrentReplicas, st.LastScaleTime = d.Replicas, &metav1.Time{Time: now}
	r.event(hpa, corev1.EventTypeNormal, "SuccessfulRescale", fmt.Sprintf("New size: %d; reason: %s", d.Replicas, d.Why))
	return st, 0
}

// ReasonAmbiguousSelector: another federated HPA scales the same target
// (Kubernetes' reason for HPAs that select the same pods).
const ReasonAmbiguousSelector = "AmbiguousSelector"

// alsoScaling names the other HPAs of hpa's namespace that scale the same
// target on the host (those a policy propagates to run in the members are
// the take-over's business).
func (r *Reconciler) alsoScaling(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, group string) ([]string, error) {
	list := &autoscalingv2.HorizontalPodAutoscalerList{}
	if err := r.Client.List(ctx, list, client.InNamespace(hpa.Namespace)); err != nil {
		return nil, err
	}
	var out []string
	for i := range list.Items {
		o := &list.Items[i]
		ref := o.Spec.ScaleTargetRef
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if o.Name == hpa.Name || err != nil || gv.Group != group || ref.Kind != hpa.Spec.ScaleTargetRef.Kind ||
			ref.Name != hpa.Spec.ScaleTargetRef.Name || !o.DeletionTimestamp.IsZero() {
			continue
		}
		propagated, err := r.federated(ctx, o.Namespace, o.Name, "HorizontalPodAutoscaler", "autoscaling")
		if err != nil {
			return nil, fmt.Errorf("is HPA %s propagated: %w", o.Name, err)
		}
		if !propagated {
			out = append(out, o.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// policyOf returns the scaling policy an HPA's spec asks for.
func policyOf(hpa *autoscalingv2.HorizontalPodAutoscaler) autoscale.Policy {
	p := autoscale.Policy{Min: 1, Max: hpa.Spec.MaxReplicas, DownWindow: defaultDownWindow, Legacy: hpa.Spec.Behavior == nil}
	if m := hpa.Spec.MinReplicas; m != nil && *m > 0 {
		// minReplicas 0 (HPAScaleToZero) counts as 1: scaling up from zero
		// needs an Object or External metric, which a federated HPA does
		// not read, so a workload scaled to zero would stay there.
		p.Min = *m
	}
	if b := hpa.Spec.Behavior; b != nil {
		if b.ScaleDown != nil {
			if b.ScaleDown.StabilizationWindowSeconds != nil {
				p.DownWindow = time.Duration(*b.ScaleDown.StabilizationWindowSeconds) * time.Second
			}
			p.Down = rules(b.ScaleDown, autoscale.DefaultDown)
		}
		if b.ScaleUp != nil {
			if b.ScaleUp.StabilizationWindowSeconds != nil {
				p.UpWindow = time.Duration(*b.ScaleUp.StabilizationWindowSeconds) * time.Second
			}
			p.Up = rules(b.ScaleUp, autoscale.DefaultUp)
		}
	}
	return p
}

// decide runs autoscale.Decide with the HPA's bounds, windows and
// scaling policies, keeping the history of recommendations and changes;
// the func returned forgets the change if it could not be made.
func (r *Reconciler) decide(hpa *autoscalingv2.HorizontalPodAutoscaler, metrics []autoscale.Metric, current int32, step *int32, now time.Time) (autoscale.Decision, func()) {
	p := policyOf(hpa)
	p.DownStep = step
	key := types.NamespacedName{Namespace: hpa.Namespace, Name: hpa.Name}
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.history[key]
	if h.uid != hpa.UID {
		// A new HPA, or a restart: start from the current replicas, so
		// that no scale-down comes before a whole window.
		h = history{uid: hpa.UID, past: autoscale.Seed(current, now)}
	}
	d, keep := autoscale.Decide(metrics, current, p, h.past, now)
	r.history[key] = history{uid: hpa.UID, past: keep}
	return d, func() { r.undo(key, h) }
}

// undo puts an HPA's history back as it was before a change that could
// not be made (refused by scale-down protection, say): it does not count
// against the scaling policies' periods.
func (r *Reconciler) undo(key types.NamespacedName, h history) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.history[key]; ok && cur.uid == h.uid {
		cur.past.Events = h.past.Events
		r.history[key] = cur
	}
}

// rules converts one direction's behavior (policies and selectPolicy;
// either left out keeps Kubernetes' default for it).
func rules(b *autoscalingv2.HPAScalingRules, def autoscale.Rules) *autoscale.Rules {
	out := def
	if b.SelectPolicy != nil {
		out.Select = autoscale.Select(*b.SelectPolicy)
	}
	if len(b.Policies) > 0 {
		out.Rates = make([]autoscale.Rate, 0, len(b.Policies))
		for _, pol := range b.Policies {
			out.Rates = append(out.Rates, autoscale.Rate{Percent: pol.Type == autoscalingv2.PercentScalingPolicy, Value: pol.Value,
				Period: time.Duration(pol.PeriodSeconds) * time.Second})
		}
	}
	return &out
}

// scale sets the host object's replicas at the kind's replicas path
// (spec.replicas or its WorkloadInterpreter's; scale-down protection may
// refuse it). The count was decided from tmpl, so the merge patch carries
// tmpl's resourceVersion. When the object was written since, it is read
// again: if it is still tmpl's object (its UID) with tmpl's replicas (the
// write was its status, a label), the patch goes again on top of it, a few
// times at most; if it was scaled since (by a user, and the cache has not
// seen it yet) or made anew under the same name, the Conflict is returned
// instead of a count decided from the old one.
func (r *Reconciler) scale(ctx context.Context, tmpl *unstructured.Unstructured, replicas int32) error {
	path := workload.ReplicasPath(tmpl)
	if len(path) == 0 {
		return fmt.Errorf("scale %s %s: no replicas path", tmpl.GetKind(), tmpl.GetName())
	}
	want, _, _ := unstructured.NestedFieldNoCopy(tmpl.Object, path...)
	base := tmpl
	for try := 1; ; try++ {
		err := r.patchReplicas(ctx, base, path, replicas)
		if err == nil {
			return nil
		}
		err = fmt.Errorf("scale %s %s to %d: %w", tmpl.GetKind(), tmpl.GetName(), replicas, err)
		if !apierrors.IsConflict(err) || try == maxScaleTries {
			return err
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(tmpl.GroupVersionKind())
		if gerr := r.reader().Get(ctx, client.ObjectKeyFromObject(tmpl), live); gerr != nil {
			return err
		}
		if got, _, _ := unstructured.NestedFieldNoCopy(live.Object, path...); live.GetUID() != tmpl.GetUID() || !equality.Semantic.DeepEqual(got, want) {
			return err
		}
		base = live
	}
}

// maxScaleTries bounds the patches of one scale whose target's other
// fields keep changing.
const maxScaleTries = 3

// patchReplicas merge-patches the replicas at path, conditional on base's
// resourceVersion.
func (r *Reconciler) patchReplicas(ctx context.Context, base *unstructured.Unstructured, path []string, replicas int32) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(base.GroupVersionKind())
	obj.SetNamespace(base.GetNamespace())
	obj.SetName(base.GetName())
	var body any = replicas
	for i := len(path) - 1; i >= 0; i-- {
		body = map[string]any{path[i]: body}
	}
	m := body.(map[string]any)
	meta, _ := m["metadata"].(map[string]any) // a replicas path under metadata
	if meta == nil {
		meta = map[string]any{}
		m["metadata"] = meta
	}
	meta["resourceVersion"] = base.GetResourceVersion()
	patch, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return r.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}

// reader reads targets past the cache (Reader, or Client).
func (r *Reconciler) reader() client.Reader {
	if r.Reader != nil {
		return r.Reader
	}
	return r.Client
}

// writeStatus merge-patches the HPA's status when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, st autoscalingv2.HorizontalPodAutoscalerStatus) error {
	if statusEqual(hpa.Status, st) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	if err := r.Client.Status().Patch(ctx, hpa, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("status of HPA %s/%s: %w", hpa.Namespace, hpa.Name, err)
	}
	return nil
}

// forget drops the history of an HPA that is gone or no longer
// federated.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.history, key)
	delete(r.since, key)
}

// awaited is how long the take-over of hpa has waited for pull members'
// first reports: since it first did for the HPA of this UID (since a
// restart, or since a policy last propagated the HPA, which forgets it).
func (r *Reconciler) awaited(hpa *autoscalingv2.HorizontalPodAutoscaler) time.Duration {
	key := types.NamespacedName{Namespace: hpa.Namespace, Name: hpa.Name}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.since[key]
	if !ok || s.uid != hpa.UID {
		s = seen{uid: hpa.UID, at: now}
		if r.since == nil {
			r.since = map[types.NamespacedName]seen{}
		}
		r.since[key] = s
	}
	return now.Sub(s.at)
}

// hpaOfFederatedObject maps the FederatedObject of an HPA to the HPA.
func hpaOfFederatedObject(_ context.Context, o client.Object) []reconcile.Request {
	fo, ok := o.(*v1alpha1.FederatedObject)
	if !ok || fo.Spec.Template.Kind != "HorizontalPodAutoscaler" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: fo.Spec.Template.Namespace, Name: fo.Spec.Template.Name}}}
}

func (r *Reconciler) event(hpa *autoscalingv2.HorizontalPodAutoscaler, kind, reason, msg string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(hpa, nil, kind, reason, "Autoscale", "%s", msg)
	}
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// errNoRequest says a Utilization target needs the pods' request.
var errNoRequest = errors.New("the pod template requests none of the resource")

// retryTakeOver is when to look again at a take-over that did not finish:
// soon while it makes progress; at the interval when it waits for what
// may take long (slow: an error, such as a delete the member forbids, or
// a member away) and reported the same the pass before, so that a stuck
// take-over does not list every member's HPAs every takeOverRetry.
func (r *Reconciler) retryTakeOver(hpa *autoscalingv2.HorizontalPodAutoscaler, reason, message string, slow bool) time.Duration {
	if c := findCondition(hpa.Status, autoscalingv2.AbleToScale); slow && c != nil && c.Reason == reason && c.Message == message {
		return cmp.Or(r.Interval, DefaultInterval)
	}
	return takeOverRetry
}

// downStep is the host's scale-down protection of the target
// (config/admission/scale-down-protection.yaml): the most percent of its
// replicas one change may remove, read as the admission policy reads
// it (the workload's annotation flotilla.io/scale-down-limit, else its
// namespace's, an empty value on the workload included; a value that is
// not 0–999 counts as 50), or nil where none applies (not set, empty, or
// a kind the policy does not cover).
func (r *Reconciler) downStep(ctx context.Context, tmpl *unstructured.Unstructured) (*int32, error) {
	gk := tmpl.GroupVersionKind().GroupKind()
	if gk.Group != "apps" || (gk.Kind != "Deployment" && gk.Kind != "StatefulSet" && gk.Kind != "ReplicaSet") {
		return nil, nil
	}
	text, ok := tmpl.GetAnnotations()[v1alpha1.AnnotationScaleDownLimit]
	if !ok {
		ns := &corev1.Namespace{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: tmpl.GetNamespace()}, ns); err != nil {
			return nil, fmt.Errorf("read the scale-down limit of namespace %s: %w", tmpl.GetNamespace(), err)
		}
		text = ns.Annotations[v1alpha1.AnnotationScaleDownLimit]
	}
	if text == "" {
		return nil, nil
	}
	step := int32(50)
	if n, err := strconv.Atoi(text); err == nil && len(text) <= 3 && strings.Trim(text, "0123456789") == "" {
		step = int32(n)
	}
	return &step, nil
}

// keepTransition keeps the previous status's transition time for the
// condition typ when its status is the same as before the pass (set
// twice in one pass, the second setting would otherwise count as a
// transition).
func keepTransition(st *autoscalingv2.HorizontalPodAutoscalerStatus, prev autoscalingv2.HorizontalPodAutoscalerStatus, typ autoscalingv2.HorizontalPodAutoscalerConditionType) {
	old, cur := findCondition(prev, typ), findCondition(*st, typ)
	if old != nil && cur != nil && old.Status == cur.Status {
		cur.LastTransitionTime = old.LastTransitionTime
	}
}
