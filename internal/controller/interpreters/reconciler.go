package interpreters

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Name is the controller's name for --controllers.
const Name = "interpreters"

// Permissions: read WorkloadInterpreters and write their status; keep
// their revisions in flotilla-system; CRDs are read for their schemas
// (the manager's role has that already).
//
// +kubebuilder:rbac:groups=flotilla.io,resources=workloadinterpreters,verbs=get;list;watch
// +kubebuilder:rbac:groups=flotilla.io,resources=workloadinterpreters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,namespace=flotilla-system,resources=controllerrevisions,verbs=get;list;create;delete

// Condition reasons of a WorkloadInterpreter's Ready condition.
const (
	// ReasonTypeChecked: compiled and checked against the CRD's schema.
	ReasonTypeChecked = "TypeChecked"
	// ReasonCompiled: compiled; the kind has no CRD on the host (yet), or
	// its schema could not be read when nothing else was in use, so
	// fields are checked only when the expressions run.
	ReasonCompiled = "Compiled"
	// ReasonInvalid: this generation does not compile; the one in use
	// before stays in use, else the kind is propagated without
	// interpretation.
	ReasonInvalid = "Invalid"
	// ReasonPending: this generation cannot be checked yet (its CRD's
	// schema could not be read); the one in use before stays meanwhile.
	ReasonPending = "Pending"
)

// Reconciler writes each WorkloadInterpreter's Ready condition from the
// loader's outcome, and records the generation in use as a
// ControllerRevision (revisions.go).
type Reconciler struct {
	// Client reads and writes WorkloadInterpreters (cached), and writes
	// their revisions.
	Client client.Client
	// Reader lists the revisions (uncached: only flotilla-system's).
	Reader client.Reader
	// Loader holds the outcomes.
	Loader *Loader
	// Recorder records an event when an interpreter goes out of use.
	Recorder events.EventRecorder
}

// SetupWithManager registers the controller, and the loader with it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1alpha1.WorkloadInterpreter{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(r.Loader.changed, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// Reconcile writes one interpreter's Ready condition.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wi := &v1alpha1.WorkloadInterpreter{}
	if err := r.Client.Get(ctx, req.NamespacedName, wi); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !wi.DeletionTimestamp.IsZero() {
		// Unloaded already; a finalizer of someone else's keeps it.
		return reconcile.Result{}, nil
	}
	out, ok := r.Loader.Outcome(wi.Name)
	if !ok || out.Generation != wi.Generation {
		// The loader compiles from the same cache and wakes this
		// controller when it has; this only covers a lost wake-up.
		return reconcile.Result{RequeueAfter: 5 * time.Second}, nil
	}
	gone, err := r.writeCondition(ctx, wi, out)
	if err != nil || gone {
		return reconcile.Result{}, err
	}
	// Recorded after the condition, so that a failure here (retried)
	// never holds the condition back; only a generation this object's
	// own check put in use.
	if out.Err == nil && !out.Provisional && out.InUse == wi.Generation && out.UID == wi.UID {
		if err := r.keepInUse(ctx, wi); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// writeCondition sets wi's Ready condition from out, if it changed; gone
// says wi was deleted meanwhile.
func (r *Reconciler) writeCondition(ctx context.Context, wi *v1alpha1.WorkloadInterpreter, out Outcome) (gone bool, err error) {
	cond := Condition(out, wi.Generation)
	// A copy: SetStatusCondition changes the slice's element in place.
	var prev *metav1.Condition
	if c := meta.FindStatusCondition(wi.Status.Conditions, cond.Type); c != nil {
		prev = c.DeepCopy()
	}
	if !meta.SetStatusCondition(&wi.Status.Conditions, cond) && wi.Status.ObservedGeneration == wi.Generation {
		return false, nil
	}
	wi.Status.ObservedGeneration = wi.Generation
	if err := r.Client.Status().Update(ctx, wi); apierrors.IsNotFound(err) {
		return true, nil
	} else if err != nil {
		return false, fmt.Errorf("update the status of WorkloadInterpreter %s: %w", wi.Name, err)
	}
	if cond.Status == metav1.ConditionFalse && (prev == nil || prev.Status != metav1.ConditionFalse || prev.Message != cond.Message) {
		r.Recorder.Eventf(wi, nil, "Warning", cond.Reason, "Interpret", "%s", cond.Message)
	}
	return false, nil
}

// Condition is the Ready condition an outcome gives.
func Condition(out Outcome, generation int64) metav1.Condition {
	c := metav1.Condition{Type: "Ready", ObservedGeneration: generation}
	crd, _, _ := strings.Cut(out.CRD, "@")
	switch {
	case out.Err != nil && out.SchemaErr != nil && out.InUse != 0:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonPending
		c.Message = fmt.Sprintf("generation %d waits for its check: the schema of its CustomResourceDefinition could not be read (%v), reading it again; generation %d stays in use for %s meanwhile",
			out.Generation, out.SchemaErr, out.InUse, out.Kind.String())
	case out.Err != nil && out.InUse == out.Generation:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonInvalid
		against := "its CustomResourceDefinition"
		if crd != "" {
			against = "CustomResourceDefinition " + crd
		}
		c.Message = fmt.Sprintf("generation %d no longer checks against %s: %v; it stays in use for %s as compiled before, until this is fixed or the interpreter is deleted",
			out.Generation, against, out.Err, out.Kind.String())
	case out.Err != nil && out.InUse != 0:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonInvalid
		c.Message = fmt.Sprintf("generation %d is not in use: %v; generation %d stays in use for %s until this is fixed or the interpreter is deleted",
			out.Generation, out.Err, out.InUse, out.Kind.String())
	case out.Err != nil:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonInvalid
		c.Message = fmt.Sprintf("not in use, %s objects are propagated as they are: %v", out.Kind.String(), out.Err)
	case out.Provisional:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonCompiled
		c.Message = fmt.Sprintf("in use for %s, not yet checked against its CustomResourceDefinition, whose schema could not be read (%v); reading it again", out.Kind.String(), out.SchemaErr)
	case out.CRD != "":
		c.Status, c.Reason = metav1.ConditionTrue, ReasonTypeChecked
		c.Message = fmt.Sprintf("in use for %s; expressions checked against the schema of CustomResourceDefinition %s", out.Kind.String(), crd)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonCompiled
		c.Message = fmt.Sprintf("in use for %s; no CustomResourceDefinition of the kind on the host, so fields are checked only when expressions run", out.Kind.String())
	}
	if len(c.Message) > 32768 {
		c.Message = c.Message[:32765] + "..."
	}
	return c
}
