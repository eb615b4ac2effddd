package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// FieldManager is the server-side apply field manager of everything the
// federation writes to members.
const FieldManager = "flotilla"

// NamespaceFieldManager is the field manager of the namespaces Flotilla
// creates in members on demand, for the copies in them. It is not
// FieldManager: such a namespace is not a copy of a host Namespace
// (Written is false for it), so neither the placement, eviction or
// deletion of a propagated Namespace nor Delete removes it, with the
// copies and the member's own objects in it. A host Namespace placed in
// that member takes it over (OnDemandNamespace).
const NamespaceFieldManager = "flotilla-namespace"

// Outcome is what Apply or Delete did to a member object.
type Outcome string

// Outcomes.
const (
	// Created: the object did not exist and was created.
	Created Outcome = "Created"
	// Updated: a federation-set field differed (a template change, or drift
	// in the member) and was written.
	Updated Outcome = "Updated"
	// Unchanged: every federation-set field already held its value; nothing
	// was sent.
	Unchanged Outcome = "Unchanged"
	// Adopted: an object Flotilla did not manage was taken over in place.
	Adopted Outcome = "Adopted"
	// Conflict: an object Flotilla does not manage has the name; it was not
	// touched.
	Conflict Outcome = "Conflict"
	// Deleted: the managed object was deleted.
	Deleted Outcome = "Deleted"
	// Absent: there was nothing to delete.
	Absent Outcome = "Absent"
)

// ErrConflict is returned with Conflict.
var ErrConflict = errors.New("object exists in the member and is not managed by Flotilla")

// ErrGroupUnavailable is Delete's error for a kind the member's mapping
// does not know while its API group cannot be discovered (an aggregated
// apiserver down) or the member's last discovery listed it: the copy
// cannot be told gone, and the deletion is tried again.
var ErrGroupUnavailable = errors.New("the member does not list the kind now, but its API group failed discovery (an aggregated apiserver down? see kubectl get apiservices in the member) or was listed moments ago: the copy cannot be confirmed gone yet")

// Applier writes objects into one member.
type Applier struct {
	// Client is a dynamic client for the member.
	Client dynamic.Interface
	// Mapper maps kinds to the member's resources.
	Mapper meta.RESTMapper
	// Unavailable reports whether a kind missing from Mapper may still
	// have objects in the member (its API group's discovery failed: an
	// aggregated apiserver down); nil: never. Delete does not take such a
	// kind's copy for gone.
	Unavailable func(gk schema.GroupKind) bool
}

// Options tune one Apply.
type Options struct {
	// Adopt takes over an existing object Flotilla does not manage instead
	// of reporting Conflict.
	Adopt bool
	// Live is the member's current object, or its projection (Project),
	// when the caller has it from a cache; nil makes Apply read it.
	Live *unstructured.Unstructured
	// Verified remembers projections found current by a full comparison
	// (nil: remember nothing).
	Verified *Verified
	// KeepLive are field paths (such as spec.replicas) whose value, when the
	// member's object has one, is kept as the member has it: a member-side
	// actor (an HPA) owns it. The federation still applies the field, with
	// the member's value, so that ownership never lapses and the apiserver
	// never resets it.
	KeepLive [][]string
}

// LabelTemplateHash, on member copies, is a hash of everything the
// federation sets. A change of it (a field added to, changed in or
// removed from the rendered object) makes Apply write even when the member
// already holds every remaining field, so that removals reach the member.
// It is a label, not an annotation, because a Deployment's generation
// counts annotation changes (an adoption would bump it).
const LabelTemplateHash = "flotilla.io/template-hash"

// Apply makes the member's copy of desired hold desired's fields: it marks
// the object managed, drops what the member's apiserver owns (status, uid,
// resourceVersion, generation, timestamps, managed fields, and the host's
// owner references and finalizers), compares the rest with the live object
// and sends a server-side apply only when a federation-set field differs.
// desired is not modified. A namespaced object whose namespace the member
// lacks gets the namespace first (created; one that appears meanwhile is
// left as it is).
func (a *Applier) Apply(ctx context.Context, desired *unstructured.Unstructured, opts Options) (Outcome, error) {
	in, err := Prepare(desired)
	if err != nil {
		return "", err
	}
	return a.ApplyIntent(ctx, in, opts)
}

// ApplyIntent is Apply of a prepared Intent (in is not modified).
func (a *Applier) ApplyIntent(ctx context.Context, in *Intent, opts Options) (Outcome, error) {
	outcome, err := a.write(ctx, in, opts)
	if ns := in.Object.GetNamespace(); err != nil && ns != "" && missingNamespace(err) {
		if err = a.ensureNamespace(ctx, ns); err == nil {
			outcome, err = a.write(ctx, in, opts)
		}
	}
	return outcome, err
}

// ensureNamespace creates a namespace in the member for the objects it
// receives, labelled managed and owned by NamespaceFieldManager. One that
// exists by then (created by someone else meanwhile) is left as it is:
// neither labelled nor taken as Flotilla's.
func (a *Applier) ensureNamespace(ctx context.Context, name string) error {
	res, err := a.resource(namespaceGVK, "")
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	ns := &unstructured.Unstructured{}
	ns.SetGroupVersionKind(namespaceGVK)
	ns.SetName(name)
	ns.SetLabels(map[string]string{v1alpha1.LabelManaged: "true"})
	_, err = res.Create(ctx, ns, metav1.CreateOptions{FieldManager: NamespaceFieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// LegacyOnDemandNamespace reports whether a member object is a namespace
// that an earlier version created on demand: with FieldManager (it is
// Written) and the template hash of a bare namespace of its name. It is
// not taken for a copy of a host Namespace that the status does not
// record (copies.Unrecorded). A copy of a host Namespace with no labels or
// annotations of its own looks the same, and is left in place too.
func LegacyOnDemandNamespace(obj *unstructured.Unstructured) bool {
	if obj.GroupVersionKind() != namespaceGVK {
		return false
	}
	bare := &unstructured.Unstructured{}
	bare.SetGroupVersionKind(namespaceGVK)
	bare.SetName(obj.GetName())
	in, err := Prepare(bare)
	return err == nil && obj.GetLabels()[LabelTemplateHash] == in.Hash
}

// namespaceGVK is the kind of the namespaces created on demand.
var namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}

// OnDemandNamespace reports whether a member object is a namespace Flotilla
// created on demand for the copies in it (NamespaceFieldManager) and no
// propagated Namespace has written since: a placed host Namespace takes it
// over without a conflict, nothing else counts it as a copy.
func OnDemandNamespace(obj *unstructured.Unstructured) bool {
	if obj.GroupVersionKind() != namespaceGVK || Written(obj) {
		return false
	}
	for _, f := range obj.GetManagedFields() {
		if f.Manager == NamespaceFieldManager {
			return true
		}
	}
	return false
}

// missingNamespace reports whether a write failed because the object's
// namespace does not exist in the member.
func missingNamespace(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsNotFound(err) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// Intent is an object ready to be written into members: labelled managed,
// without what a member's apiserver sets, and carrying the template-hash
// label. Preparing it once serves every write of it (its Hash also
// identifies the write, see propagate's flights).
type Intent struct {
	// Object is the prepared object; never modified by Apply.
	Object *unstructured.Unstructured
	// Hash is the value of the template-hash label: a hash of Object
	// without that label.
	Hash string
	// OwnedHash is the owned-field hash of Object (owned.go): what the
	// projection of a copy that holds it carries.
	OwnedHash string
}

// Prepare makes the Intent of desired (not modified).
func Prepare(desired *unstructured.Unstructured) (*Intent, error) {
	return Take(desired.DeepCopy())
}

// Take is Prepare of an object the caller hands over (a freshly rendered
// one): obj becomes the Intent's Object, modified in place, which spares
// a copy of it on every pass.
func Take(obj *unstructured.Unstructured) (*Intent, error) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1alpha1.LabelManaged] = "true"
	obj.SetLabels(labels)
	// What the member's apiserver sets is never part of the intent: left in,
	// it would never match and every Apply would write.
	unstructured.RemoveNestedField(obj.Object, "status")
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink", "ownerReferences", "finalizers"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	// The hash is of the intent: a member-side change of a kept field
	// (an HPA scaling) must not look like a template change.
	hash, err := setTemplateHash(obj)
	if err != nil {
		return nil, err
	}
	owned, err := intentOwnedHash(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("hash %s: %w", describe(obj), err)
	}
	return &Intent{Object: obj, Hash: hash, OwnedHash: owned}, nil
}

// write is ApplyIntent without the namespace creation.
func (a *Applier) write(ctx context.Context, in *Intent, opts Options) (Outcome, error) {
	obj := in.Object
	res, err := a.resource(obj.GroupVersionKind(), obj.GetNamespace())
	if err != nil {
		return "", err
	}
	live := opts.Live
	if live != nil && IsProjection(live) {
		if current(live, in, opts) {
			return Unchanged, nil
		}
		switch {
		case live.GetLabels()[LabelTemplateHash] == in.Hash:
			// Same intent, other owned fields: drift, or a value the member
			// spells its own way. Only the whole copy can tell.
			live = nil
			verifyReads.Inc()
		case lacksKept(live, opts.KeepLive):
			// A kept field the projection does not carry (a Job's pod
			// template): only the whole copy has the member's value.
			live = nil
		case !Written(live) && live.GroupVersionKind() == namespaceGVK:
			// A namespace that is not Flotilla's copy: only the whole
			// object tells one created on demand (its managed fields) from
			// another one.
			live = nil
		}
	}
	if live == nil {
		live, err = res.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			live, err = nil, nil
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", describe(obj), err)
		}
	}
	if live != nil && len(opts.KeepLive) > 0 {
		obj = obj.DeepCopy() // in stays as prepared
		for _, path := range opts.KeepLive {
			if v, found, _ := unstructured.NestedFieldCopy(live.Object, path...); found {
				if err := unstructured.SetNestedField(obj.Object, v, path...); err != nil {
					return "", fmt.Errorf("%s: keep the member's %s: %w", describe(obj), strings.Join(path, "."), err)
				}
			}
		}
	}
	outcome := Created
	if live == nil && obj.GetAnnotations()[v1alpha1.AnnotationHeld] == "true" {
		// A held copy the member lacks (deleted there, or never seen by a
		// stale report) is created unpaused: a paused new Deployment
		// would run nothing at all.
		obj = obj.DeepCopy()
		unstructured.RemoveNestedField(obj.Object, "spec", "paused")
		if in := workload.RolloutInterpreter(obj); in != nil {
			unstructured.RemoveNestedField(obj.Object, in.PausedPath()...)
		}
	}
	if live != nil {
		managed := isManaged(live)
		switch {
		case !managed && !opts.Adopt && !OnDemandNamespace(live):
			return Conflict, fmt.Errorf("%s: %w", describe(obj), ErrConflict)
		case !managed:
			outcome = Adopted
		case !IsProjection(live) && Contains(live.Object, obj.Object):
			h, ok := liveOwnedHash(live.Object)
			if !ok {
				h = noOwnedFields // labelled managed, never applied by Flotilla
			}
			opts.Verified.record(verifiedKey(obj), in.OwnedHash, h)
			return Unchanged, nil
		default:
			outcome = Updated
		}
	}
	// A copy the member did not hold is applied without force (unless
	// adopting): should an object of that name appear between the read
	// and the write (created by someone else meanwhile), its fields that
	// the copy sets otherwise are not taken over, the member refuses (409)
	// and the copy is in conflict, as it would be had the read seen it.
	// (An object that sets none of them differently cannot be told apart
	// by the apply: it is merged with, as before.)
	create := live == nil && !opts.Adopt
	written, err := res.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: !create})
	if create && (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) {
		klog.FromContext(ctx).V(2).Info("Copy created in the member by someone else meanwhile", "object", describe(obj), "refusal", err.Error())
		return Conflict, fmt.Errorf("%s: %w", describe(obj), ErrConflict)
	}
	if err != nil {
		return "", fmt.Errorf("apply %s: %w", describe(obj), err)
	}
	if h, ok := liveOwnedHash(written.Object); ok {
		opts.Verified.record(verifiedKey(obj), in.OwnedHash, h)
	}
	return outcome, nil
}

// lacksKept reports whether a projection lacks one of the kept paths
// (a projection carries the fields compared by value, not the others).
func lacksKept(projection *unstructured.Unstructured, keep [][]string) bool {
	for _, path := range keep {
		if _, found, _ := unstructured.NestedFieldNoCopy(projection.Object, path...); !found {
			return true
		}
	}
	return false
}

// current reports whether a projection shows a copy that holds the
// intent: the owned-field hashes match (or a full comparison found this
// pair to match before), and the fields compared by value hold the
// intent's values, or the member's own where opts.KeepLive keeps them.
func current(live *unstructured.Unstructured, in *Intent, opts Options) bool {
	if !isManaged(live) || live.GetLabels()[LabelTemplateHash] != in.Hash {
		return false
	}
	h := projectionHash(live)
	if h != in.OwnedHash && !opts.Verified.matches(verifiedKey(in.Object), in.OwnedHash, h) {
		return false
	}
	for _, p := range comparedByValue {
		want, found, _ := unstructured.NestedFieldNoCopy(in.Object.Object, p...)
		if !found {
			continue
		}
		have, found, _ := unstructured.NestedFieldNoCopy(live.Object, p...)
		if found && keptLive(opts.KeepLive, p) {
			continue
		}
		if !found || !Contains(have, want) {
			return false
		}
	}
	return true
}

// keptLive reports whether path is one of keep.
func keptLive(keep [][]string, path []string) bool {
	for _, k := range keep {
		if slices.Equal(k, path) {
			return true
		}
	}
	return false
}

// verifiedKey names the copy of obj in a Verified.
func verifiedKey(obj *unstructured.Unstructured) string {
	return obj.GroupVersionKind().GroupKind().String() + "/" + joinName(obj.GetNamespace(), obj.GetName())
}

// Delete deletes the member's copy of an object if Flotilla manages it;
// an unmanaged object with that name is left alone (Conflict).
func (a *Applier) Delete(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (Outcome, error) {
	// Any version the member serves will do; a member that does not serve
	// the kind at all has no copy.
	res, err := a.resource(schema.GroupVersionKind{Group: gvk.Group, Kind: gvk.Kind}, namespace)
	if meta.IsNoMatchError(err) {
		if a.Unavailable != nil && a.Unavailable(gvk.GroupKind()) {
			// Missing from discovery, not necessarily from the member: a
			// copy may be there.
			return "", fmt.Errorf("delete %s %s: %w", gvk.GroupKind(), joinName(namespace, name), ErrGroupUnavailable)
		}
		return Absent, nil
	}
	if err != nil {
		return "", err
	}
	what := fmt.Sprintf("%s %s", gvk.Kind, joinName(namespace, name))
	live, err := res.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Absent, nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", what, err)
	}
	if !isManaged(live) {
		return Conflict, fmt.Errorf("%s: %w", what, ErrConflict)
	}
	uid := live.GetUID()
	// Background: a Job's pods go with it (Jobs default to orphaning them).
	background := metav1.DeletePropagationBackground
	err = res.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &background})
	if apierrors.IsNotFound(err) {
		return Absent, nil
	}
	if err != nil {
		return "", fmt.Errorf("delete %s: %w", what, err)
	}
	return Deleted, nil
}

// setTemplateHash records in obj a hash of obj (without the hash) and
// returns it.
func setTemplateHash(obj *unstructured.Unstructured) (string, error) {
	labels := obj.GetLabels()
	delete(labels, LabelTemplateHash)
	obj.SetLabels(labels)
	b, err := json.Marshal(obj.Object) // map keys sorted: deterministic
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", describe(obj), err)
	}
	sum := sha256.Sum256(b)
	hash := hex.EncodeToString(sum[:8])
	labels[LabelTemplateHash] = hash
	obj.SetLabels(labels)
	return hash, nil
}

// isManaged reports whether Flotilla manages a member object: its field
// manager applied fields of it (Written), whether or not the managed
// label is still there. The label alone is not enough: a manifest copied
// from another member, or written by hand, carries it too, and Flotilla
// would overwrite and delete an object it never agreed to adopt.
func isManaged(obj *unstructured.Unstructured) bool {
	return Written(obj)
}

// Written reports whether Flotilla's field manager applied fields of a
// member object: a copy Flotilla wrote, as opposed to an object that only
// carries the managed label (a manifest copied from another member, say).
// Only such copies are looked for in clusters the status does not list.
func Written(obj *unstructured.Unstructured) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == FieldManager && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// resource finds the member's resource for a kind; a kind the mapper does
// not know (a CRD installed since it last looked) makes it rediscover once.
func (a *Applier) resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	gvr, namespaced, err := Resource(a.Mapper, gvk)
	if err != nil {
		return nil, err
	}
	if namespaced {
		if namespace == "" {
			return nil, fmt.Errorf("%s is namespaced but has no namespace", gvk.Kind)
		}
		return a.Client.Resource(gvr).Namespace(namespace), nil
	}
	if namespace != "" {
		// The member's apiserver would drop the namespace and act on a
		// cluster-scoped object of that name: a namespace's template must
		// never reach past its namespace.
		return nil, fmt.Errorf("%s is cluster-scoped in the member but namespaced on the host (namespace %q): its definition differs between them", gvk.Kind, namespace)
	}
	return a.Client.Resource(gvr), nil
}

func describe(obj *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s", obj.GetKind(), joinName(obj.GetNamespace(), obj.GetName()))
}

func joinName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// Resource returns a member's resource for a kind and whether it is
// namespaced; a kind the mapper does not know (a CRD installed since it last
// looked) makes it rediscover once.
func Resource(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if r, ok := mapper.(meta.ResettableRESTMapper); ok && meta.IsNoMatchError(err) {
		r.Reset()
		m, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("the member does not serve %s: %w", gvk.GroupKind(), err)
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}
