package interpreters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// The generation of an interpreter in use outlives the process: the
// leader keeps its spec in a ControllerRevision (in flotilla-system, owned
// by the interpreter, so deleting the interpreter deletes it), and a
// loader that starts while the current generation does not compile falls
// back on it instead of propagating the kind uninterpreted.

// labelInterpreter, on a ControllerRevision, is a hash of the name of the
// WorkloadInterpreter whose spec it keeps (names are longer than label
// values may be); the annotation of the same name has the name itself.
const labelInterpreter = "flotilla.io/interpreter"

// revisionPrefix is how the revisions of an interpreter are named:
// "interpreter-<hash>-<generation>".
func revisionPrefix(name string) string {
	return "interpreter-" + nameHash(name) + "-"
}

func nameHash(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])[:16]
}

// keepInUse records wi's current generation, in use, as its revision and
// then deletes its other ones; a revision already recorded causes no
// write.
func (r *Reconciler) keepInUse(ctx context.Context, wi *v1alpha1.WorkloadInterpreter) error {
	list := &appsv1.ControllerRevisionList{}
	if err := r.Reader.List(ctx, list, client.InNamespace(v1alpha1.SystemNamespace), client.MatchingLabels{labelInterpreter: nameHash(wi.Name)}); err != nil {
		return fmt.Errorf("list the revisions of WorkloadInterpreter %s: %w", wi.Name, err)
	}
	current := func(rev *appsv1.ControllerRevision) bool {
		return rev.Revision == wi.Generation && metav1.IsControlledBy(rev, wi)
	}
	// Revisions of an earlier interpreter of the same name are of no use
	// to this one (and may hold the name its revision needs): they go
	// first, without waiting for the garbage collector. Its own older
	// ones go once the current one is recorded, so that there is always
	// one to fall back on.
	if err := r.prune(ctx, wi, list.Items, func(rev *appsv1.ControllerRevision) bool { return !metav1.IsControlledBy(rev, wi) }); err != nil {
		return err
	}
	if !slices.ContainsFunc(list.Items, func(rev appsv1.ControllerRevision) bool { return current(&rev) }) {
		if err := r.record(ctx, wi); err != nil {
			return err
		}
	}
	return r.prune(ctx, wi, list.Items, func(rev *appsv1.ControllerRevision) bool { return metav1.IsControlledBy(rev, wi) && !current(rev) })
}

// prune deletes the revisions that match.
func (r *Reconciler) prune(ctx context.Context, wi *v1alpha1.WorkloadInterpreter, revs []appsv1.ControllerRevision, match func(*appsv1.ControllerRevision) bool) error {
	for i := range revs {
		rev := &revs[i]
		if !match(rev) {
			continue
		}
		if err := r.Client.Delete(ctx, rev, client.Preconditions{UID: &rev.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete revision %s of WorkloadInterpreter %s: %w", rev.Name, wi.Name, err)
		}
	}
	return nil
}

// record creates the revision of wi's current generation.
func (r *Reconciler) record(ctx context.Context, wi *v1alpha1.WorkloadInterpreter) error {
	spec, err := json.Marshal(wi.Spec)
	if err != nil {
		return err
	}
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   v1alpha1.SystemNamespace,
			Name:        revisionPrefix(wi.Name) + strconv.FormatInt(wi.Generation, 10),
			Labels:      map[string]string{labelInterpreter: nameHash(wi.Name)},
			Annotations: map[string]string{labelInterpreter: wi.Name},
			// Without blockOwnerDeletion, which would need the right
			// to update the interpreter's finalizers (where the
			// OwnerReferencesPermissionEnforcement plugin is on) and
			// gains nothing here.
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "WorkloadInterpreter",
				Name: wi.Name, UID: wi.UID, Controller: ptr.To(true),
			}},
		},
		Data:     runtime.RawExtension{Raw: spec},
		Revision: wi.Generation,
	}
	err = r.Client.Create(ctx, rev)
	if apierrors.IsAlreadyExists(err) {
		// Recorded by an earlier reconcile, or left by an interpreter of
		// the same name since deleted (the garbage collector has not
		// removed it yet): only the first will do.
		existing := &appsv1.ControllerRevision{}
		if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(rev), existing); err != nil {
			return fmt.Errorf("read revision %s of WorkloadInterpreter %s: %w", rev.Name, wi.Name, err)
		}
		if !metav1.IsControlledBy(existing, wi) {
			return fmt.Errorf("revision %s of WorkloadInterpreter %s belongs to an earlier interpreter of that name; waiting for it to be deleted", rev.Name, wi.Name)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("record generation %d of WorkloadInterpreter %s: %w", wi.Generation, wi.Name, err)
	}
	return nil
}

// lastInUse compiles the newest revision of wi recorded as in use, for a
// loader that has nothing in use for it. The revision's spec was checked
// against its CRD when it was recorded; it is compiled unchecked now (a
// CRD change since may be what makes the current generation fail). It
// returns nil when there is none (no generation ever compiled), or when
// the revisions cannot be read (out is then marked to be tried again).
func (l *Loader) lastInUse(ctx context.Context, wi *v1alpha1.WorkloadInterpreter, out *Outcome) (*interpreter.Interpreter, int64) {
	logger := klog.FromContext(ctx)
	readCtx, cancel := context.WithTimeout(ctx, schemaReadTimeout)
	defer cancel()
	list := &appsv1.ControllerRevisionList{}
	if err := l.Reader.List(readCtx, list, client.InNamespace(v1alpha1.SystemNamespace), client.MatchingLabels{labelInterpreter: nameHash(wi.Name)}); err != nil {
		logger.Info("Cannot read the generation of a workload interpreter last in use", "interpreter", wi.Name, "err", err.Error())
		out.retry = true
		return nil, 0
	}
	var newest *appsv1.ControllerRevision
	for i := range list.Items {
		rev := &list.Items[i]
		if metav1.IsControlledBy(rev, wi) && (newest == nil || rev.Revision > newest.Revision) {
			newest = rev
		}
	}
	if newest == nil {
		return nil, 0
	}
	kept := &v1alpha1.WorkloadInterpreter{ObjectMeta: *wi.ObjectMeta.DeepCopy()}
	if err := json.Unmarshal(newest.Data.Raw, &kept.Spec); err != nil {
		logger.Info("Ignoring an unreadable revision of a workload interpreter", "interpreter", wi.Name, "revision", newest.Name, "err", err.Error())
		return nil, 0
	}
	in, err := compileSpec(kept, interpreter.Options{})
	if err != nil {
		logger.Info("Ignoring a revision of a workload interpreter that does not compile", "interpreter", wi.Name, "revision", newest.Name, "err", err.Error())
		return nil, 0
	}
	if in.Kind() != out.Kind {
		logger.Info("Ignoring a revision of a workload interpreter for another kind", "interpreter", wi.Name, "revision", newest.Name, "kind", in.Kind())
		return nil, 0
	}
	return in, newest.Revision
}
