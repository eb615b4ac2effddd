package interpreters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
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
// deletes its older ones; a revision already recorded causes no write.
func (r *Reconciler) keepInUse(ctx context.Context, wi *v1alpha1.WorkloadInterpreter) error {
	list := &appsv1.ControllerRevisionList{}
	if err := r.Reader.List(ctx, list, client.InNamespace(v1alpha1.SystemNamespace), client.MatchingLabels{labelInterpreter: nameHash(wi.Name)}); err != nil {
		return fmt.Errorf("list the revisions of WorkloadInterpreter %s: %w", wi.Name, err)
	}
	have := false
	for i := range list.Items {
		rev := &list.Items[i]
		if rev.Revision == wi.Generation && metav1.IsControlledBy(rev, wi) {
			have = true
			continue
		}
		if err := r.Client.Delete(ctx, rev, client.Preconditions{UID: &rev.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete revision %s of WorkloadInterpreter %s: %w", rev.Name, wi.Name, err)
		}
	}
	if have {
		return nil
	}
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
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(wi,
				v1alpha1.GroupVersion.WithKind("WorkloadInterpreter"))},
		},
		Data:     runtime.RawExtension{Raw: spec},
		Revision: wi.Generation,
	}
	if err := r.Client.Create(ctx, rev); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("record generation %d of WorkloadInterpreter %s: %w", wi.Generation, wi.Name, err)
	}
	return nil
}

// lastInUse compiles the newest revision of wi recorded as in use, for a
// loader that has nothing in use for it. The revision's spec was checked
// against its CRD when it was recorded; it is compiled unchecked now (a
// CRD change since may be what makes the current generation fail). It
// returns nil when there is none (a first generation that never
// compiled) or it cannot be read.
func (l *Loader) lastInUse(ctx context.Context, wi *v1alpha1.WorkloadInterpreter) (*interpreter.Interpreter, int64) {
	list := &appsv1.ControllerRevisionList{}
	if err := l.Reader.List(ctx, list, client.InNamespace(v1alpha1.SystemNamespace), client.MatchingLabels{labelInterpreter: nameHash(wi.Name)}); err != nil {
		klog.FromContext(ctx).Info("Cannot read the generation of a workload interpreter last in use", "interpreter", wi.Name, "err", err.Error())
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
		return nil, 0
	}
	in, err := compileSpec(kept, interpreter.Options{})
	if err != nil {
		return nil, 0
	}
	return in, newest.Revision
}
