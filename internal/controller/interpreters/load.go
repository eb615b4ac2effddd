package interpreters

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// schemaReadTimeout bounds one read of a CRD's schema: loads are
// serialized, so one hung request must not hold the others.
const schemaReadTimeout = 30 * time.Second

// load compiles an interpreter, as the cache holds it now, and puts it in
// (or takes it out of) the registry. What works stays in use: a
// generation that does not compile, or cannot be checked because its
// CRD's schema cannot be read for now, leaves the one in use as it is.
func (l *Loader) load(ctx context.Context, o any) {
	wi, ok := o.(*v1alpha1.WorkloadInterpreter)
	if !ok {
		return
	}
	l.loading.Lock()
	defer l.loading.Unlock()
	// The informers and the retries may hand over an older object than
	// the cache's by the time they get here: the last one wins.
	if l.Cache != nil {
		current := &v1alpha1.WorkloadInterpreter{}
		switch err := l.Cache.Get(ctx, client.ObjectKey{Name: wi.Name}, current); {
		case apierrors.IsNotFound(err):
			l.unloadLocked(wi.Name)
			return
		case err == nil:
			wi = current
		}
	}
	if !wi.DeletionTimestamp.IsZero() {
		l.unloadLocked(wi.Name)
		return
	}
	l.mu.Lock()
	prev, had := l.outcomes[wi.Name]
	l.mu.Unlock()
	out, in, use := l.compile(ctx, wi, prev, had)
	l.mu.Lock()
	l.outcomes[wi.Name] = out
	l.mu.Unlock()
	if out.SchemaErr != nil || out.retry {
		l.retryLater(ctx, wi.Name)
	} else {
		l.retried(wi.Name)
	}
	if had && prev.UID == out.UID && prev.Generation == out.Generation && prev.CRD == out.CRD && prev.InUse == out.InUse && prev.Provisional == out.Provisional &&
		errString(prev.Err) == errString(out.Err) && errString(prev.SchemaErr) == errString(out.SchemaErr) {
		return // a resync or a status write: nothing changed
	}
	logger := klog.FromContext(ctx).WithValues("interpreter", wi.Name, "kind", out.Kind, "generation", wi.Generation)
	switch {
	case in != nil && use && out.Err != nil:
		logger.Info("Workload interpreter generation not in use, the one last in use restored", "inUse", out.InUse, "reason", out.Err.Error())
		l.Registry.Set(in)
	case in != nil && use:
		logger.Info("Workload interpreter in use", "crd", out.CRD, "unchecked", out.Provisional, "schemaError", errString(out.SchemaErr))
		l.Registry.Set(in)
	case out.InUse != 0:
		logger.Info("Workload interpreter generation not in use, the one in use stays", "inUse", out.InUse,
			"reason", errString(out.Err), "schemaError", errString(out.SchemaErr))
	default:
		logger.Info("Workload interpreter not in use", "reason", errString(out.Err))
		if had && prev.Kind != out.Kind {
			l.Registry.Remove(prev.Kind)
		}
		l.Registry.Remove(out.Kind)
	}
	l.notify(wi.Name)
}

// compile decides wi's outcome given the previous one: the interpreter to
// put in the registry when use is true (wi's, or the generation last in
// use, recorded by the leader, when nothing is in use here); otherwise the
// outcome's InUse says whether the one in the registry stays (not 0) or
// goes.
func (l *Loader) compile(ctx context.Context, wi *v1alpha1.WorkloadInterpreter, prev Outcome, had bool) (out Outcome, in *interpreter.Interpreter, use bool) {
	out = Outcome{Kind: targetKind(wi), Generation: wi.Generation, UID: wi.UID}
	// An interpreter's name is its kind's, so prev is of the same kind;
	// a new UID is a new interpreter of the same name.
	inUse := had && prev.InUse != 0 && prev.Kind == out.Kind && prev.UID == wi.UID
	readCtx, cancel := context.WithTimeout(ctx, schemaReadTimeout)
	s, crd, err := schemaOf(readCtx, l.Reader, l.Mapper, out.Kind)
	cancel()
	var unread *schemaUnreadError
	if errors.As(err, &unread) {
		// This generation cannot be checked now: whatever is in use
		// stays (compiled unchecked, it might fail its check), else the
		// generation last in use, else this one unchecked, until the
		// schema can be read, rather than nothing.
		out.SchemaErr = err
		if inUse {
			out.InUse, out.CRD, out.Provisional = prev.InUse, prev.CRD, prev.Provisional
			switch {
			case wi.Generation != prev.InUse:
				out.Err = fmt.Errorf("not checked yet: %w", err)
			case prev.Generation == wi.Generation && prev.SchemaErr == nil:
				// This generation's last check stands (an Invalid
				// verdict too) until the schema can be read again.
				out.Err, out.SchemaErr, out.retry = prev.Err, nil, true
			}
			return out, nil, false
		}
		if last, gen := l.lastInUse(ctx, wi, &out); last != nil {
			out.InUse = gen
			if gen != wi.Generation {
				out.Err = fmt.Errorf("not checked yet: %w", err)
			} else {
				out.Provisional = true // in use as recorded, not checked here
			}
			return out, last, true
		}
		out.Provisional = true
		if in, out.Err = compileSpec(wi, interpreter.Options{}); out.Err == nil {
			out.InUse = wi.Generation
			return out, in, true
		}
		out.Provisional = false
		return out, nil, false
	}
	if err != nil {
		out.Err = err
	} else {
		out.CRD = crd
		in, out.Err = compileSpec(wi, interpreter.Options{Schema: s})
	}
	switch {
	case out.Err == nil:
		out.InUse = wi.Generation
		return out, in, true
	case inUse && !prev.Provisional:
		// A bad edit, or a CRD change its expressions no longer fit:
		// the generation in use stays.
		out.InUse = prev.InUse
		return out, nil, false
	}
	// Nothing (checked) in use here, as in a process that starts while
	// the generation does not compile: the generation last in use.
	if last, gen := l.lastInUse(ctx, wi, &out); last != nil {
		out.InUse = gen
		return out, last, true
	}
	return out, nil, false
}

// compileSpec compiles wi's spec.
func compileSpec(wi *v1alpha1.WorkloadInterpreter, opts interpreter.Options) (*interpreter.Interpreter, error) {
	in, errs := interpreter.Compile(&wi.Spec, opts)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return in, nil
}

// unload takes a deleted interpreter's kind out of the registry.
func (l *Loader) unload(o any) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	wi, ok := o.(*v1alpha1.WorkloadInterpreter)
	if !ok {
		return
	}
	l.loading.Lock()
	defer l.loading.Unlock()
	l.unloadLocked(wi.Name)
}

// unloadLocked forgets the named interpreter; l.loading is held.
func (l *Loader) unloadLocked(name string) {
	l.mu.Lock()
	prev, had := l.outcomes[name]
	delete(l.outcomes, name)
	delete(l.retries, name)
	l.mu.Unlock()
	if had {
		l.Registry.Remove(prev.Kind)
	}
}
