package workload

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// Registry holds the compiled WorkloadInterpreters of the kinds Flotilla
// has no built-in knowledge of, by group and kind. The package's
// functions consult Interpreters for such kinds; a kind without an
// interpreter is handled generically. Safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	kinds map[schema.GroupKind]*interpreter.Interpreter
	subs  []func(schema.GroupKind)
}

// Interpreters is the registry the package's functions consult. The
// interpreter controller fills it from the host's WorkloadInterpreters.
var Interpreters = &Registry{}

// Set makes in the interpreter of its kind and tells the subscribers.
func (r *Registry) Set(in *interpreter.Interpreter) {
	r.mu.Lock()
	if r.kinds == nil {
		r.kinds = map[schema.GroupKind]*interpreter.Interpreter{}
	}
	r.kinds[in.Kind()] = in
	subs := r.subs
	r.mu.Unlock()
	for _, f := range subs {
		f(in.Kind())
	}
}

// Remove forgets the interpreter of gk (if any) and tells the
// subscribers.
func (r *Registry) Remove(gk schema.GroupKind) {
	r.mu.Lock()
	_, had := r.kinds[gk]
	delete(r.kinds, gk)
	subs := r.subs
	r.mu.Unlock()
	if had {
		for _, f := range subs {
			f(gk)
		}
	}
}

// Get returns the interpreter of gk, or nil.
func (r *Registry) Get(gk schema.GroupKind) *interpreter.Interpreter {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.kinds[gk]
}

// Kinds lists the kinds that have an interpreter.
func (r *Registry) Kinds() []schema.GroupKind {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]schema.GroupKind, 0, len(r.kinds))
	for gk := range r.kinds {
		out = append(out, gk)
	}
	return out
}

// Subscribe registers f to be called with a kind whose interpreter was
// set or removed: the objects of that kind need another look.
func (r *Registry) Subscribe(f func(schema.GroupKind)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subs = append(r.subs, f)
}
