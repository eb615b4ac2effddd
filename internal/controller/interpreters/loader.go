// Package interpreters keeps the controllers' knowledge of custom
// workload kinds in step with the host's WorkloadInterpreters: a Loader,
// in every replica, compiles each interpreter (type-checked against its
// CRD's schema when the CRD is on the host) into the workload registry
// and tells the template cache that the kind's objects need another look;
// the leader's Reconciler writes each interpreter's Ready condition.
package interpreters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// Outcome is what compiling one WorkloadInterpreter gave.
type Outcome struct {
	// Kind is the interpreter's target.
	Kind schema.GroupKind
	// Generation is the interpreter's generation compiled.
	Generation int64
	// CRD names the CRD whose schema the expressions were checked
	// against, with its version ("" when the kind has no CRD on the host).
	CRD string
	// Err is why this generation is not in use; nil when it is.
	Err error
	// InUse is the generation in the registry: Generation when Err is
	// nil; an earlier one that compiled, kept while this one does not (so
	// that a bad edit or a CRD change does not release held rollouts or
	// change how the kind is divided); 0 when none is.
	InUse int64
	// SchemaErr is why the CRD's schema could not be read (an API error),
	// read again with backoff meanwhile.
	SchemaErr error
	// Provisional says the generation in use was compiled unchecked
	// because its CRD's schema could not be read when nothing else was
	// in use; it is dropped if it then fails its check.
	Provisional bool
	// UID is the interpreter's: an outcome is of one object, not of
	// another created with the same name.
	UID types.UID
	// retry says something worth reading again could not be read (the
	// recorded generation last in use).
	retry bool
}

// Loader compiles the host's WorkloadInterpreters into a registry. It
// runs in every replica, standbys included, so that a new leader's
// controllers read custom kinds correctly from their first reconcile.
type Loader struct {
	// Cache is the manager's cache: WorkloadInterpreters and the metadata
	// of CRDs are watched through it.
	Cache cache.Cache
	// Reader reads a CRD's schema when an interpreter is compiled (not
	// cached: CRDs are large and read rarely).
	Reader client.Reader
	// Mapper finds the resource, hence the CRD name, of a kind.
	Mapper meta.RESTMapper
	// Registry receives the compiled interpreters.
	Registry *workload.Registry

	// loading serializes load: the interpreters' and the CRDs' informers
	// and the retries each call it, and the registry must end with the
	// last outcome.
	loading  sync.Mutex
	mu       sync.Mutex
	outcomes map[string]Outcome
	retries  map[string]*retry
	// changed receives the name of each interpreter whose outcome changed
	// (the Reconciler writes its condition).
	changed chan event.GenericEvent
	synced  chan struct{}
}

// NewLoader returns a loader; Start runs it.
func NewLoader(c cache.Cache, reader client.Reader, mapper meta.RESTMapper, registry *workload.Registry) *Loader {
	return &Loader{Cache: c, Reader: reader, Mapper: mapper, Registry: registry,
		outcomes: map[string]Outcome{}, retries: map[string]*retry{}, changed: make(chan event.GenericEvent, 1024), synced: make(chan struct{})}
}

// NeedLeaderElection is false: every replica keeps its registry current.
func (l *Loader) NeedLeaderElection() bool { return false }

// Synced is closed once every interpreter that existed at the start has
// been compiled into the registry.
func (l *Loader) Synced() <-chan struct{} { return l.synced }

// Outcome returns the last outcome of the named interpreter.
func (l *Loader) Outcome(name string) (Outcome, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o, ok := l.outcomes[name]
	return o, ok
}

// Start watches the interpreters and the CRDs' metadata until ctx ends.
func (l *Loader) Start(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("interpreters")
	ctx = klog.NewContext(ctx, logger)
	wis, err := l.Cache.GetInformer(ctx, &v1alpha1.WorkloadInterpreter{})
	if err != nil {
		return fmt.Errorf("watch WorkloadInterpreters: %w", err)
	}
	reg, err := wis.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { l.load(ctx, o) },
		UpdateFunc: func(_, o any) { l.load(ctx, o) },
		DeleteFunc: func(o any) { l.unload(o) },
	})
	if err != nil {
		return fmt.Errorf("watch WorkloadInterpreters: %w", err)
	}
	crds := &metav1.PartialObjectMetadata{}
	crds.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	crdInformer, err := l.Cache.GetInformer(ctx, crds)
	if err != nil {
		return fmt.Errorf("watch CustomResourceDefinitions: %w", err)
	}
	if _, err := crdInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { l.crdChanged(ctx, o) },
		UpdateFunc: func(_, o any) { l.crdChanged(ctx, o) },
		DeleteFunc: func(o any) { l.crdChanged(ctx, o) },
	}); err != nil {
		return fmt.Errorf("watch CustomResourceDefinitions: %w", err)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return nil
	}
	close(l.synced)
	logger.Info("Workload interpreters loaded", "count", len(l.Registry.Kinds()))
	<-ctx.Done()
	return nil
}

// crdChanged recompiles the interpreters of the CRD's group: its schema
// is what their expressions are checked against.
func (l *Loader) crdChanged(ctx context.Context, o any) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	m, ok := o.(client.Object)
	if !ok {
		return
	}
	_, group, _ := strings.Cut(m.GetName(), ".")
	list := &v1alpha1.WorkloadInterpreterList{}
	if err := l.Cache.List(ctx, list); err != nil {
		return
	}
	for i := range list.Items {
		if list.Items[i].Spec.Target.Group == group {
			// The outcome records a hash of the CRD's versions, so an
			// unchanged schema leaves everything as it is.
			l.load(ctx, &list.Items[i])
		}
	}
}

// targetKind is the group and kind an interpreter describes.
func targetKind(wi *v1alpha1.WorkloadInterpreter) schema.GroupKind {
	return schema.GroupKind{Group: wi.Spec.Target.Group, Kind: wi.Spec.Target.Kind}
}

// schemaOf returns the structural schema of a kind's CRD and a name for
// it with a hash of its versions; nil and "" when the kind has no CRD on
// the host (a built-in or aggregated kind, or a CRD not installed yet).
func schemaOf(ctx context.Context, reader client.Reader, mapper meta.RESTMapper, gk schema.GroupKind) (*structuralschema.Structural, string, error) {
	mapping, err := mapper.RESTMapping(gk)
	if meta.IsNoMatchError(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", &schemaUnreadError{fmt.Errorf("resource of %s: %w", gk, err)}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	name := mapping.Resource.Resource + "." + gk.Group
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, crd); apierrors.IsNotFound(err) {
		return nil, "", nil
	} else if err != nil {
		return nil, "", &schemaUnreadError{fmt.Errorf("read CustomResourceDefinition %s: %w", name, err)}
	}
	s, err := interpreter.SchemaOf(crd)
	if err != nil {
		return nil, "", err
	}
	if s == nil {
		return nil, "", nil
	}
	return s, name + "@" + versionsHash(crd), nil
}

// versionsHash identifies what of a CRD the expressions are checked
// against (its versions, with their schemas), so that a write that leaves
// them as they were (status, annotations, a conversion webhook's CA
// bundle) recompiles nothing and requeues no object of the kind.
func versionsHash(crd *apiextensionsv1.CustomResourceDefinition) string {
	b, err := json.Marshal(crd.Spec.Versions)
	if err != nil {
		return "rv-" + crd.ResourceVersion // cannot happen for a decoded CRD
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// notify wakes the Reconciler for an interpreter; a full channel drops
// the event (the Reconciler's own watch of the object catches up).
func (l *Loader) notify(name string) {
	wi := &v1alpha1.WorkloadInterpreter{}
	wi.Name = name
	select {
	case l.changed <- event.GenericEvent{Object: wi}:
	default:
	}
}

// errString is err's text, "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
