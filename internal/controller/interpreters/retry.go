package interpreters

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// schemaUnreadError says a CRD's schema could not be read for a reason
// that may pass (discovery or the apiserver failing), as opposed to a
// schema that cannot be used.
type schemaUnreadError struct{ err error }

func (e *schemaUnreadError) Error() string { return e.err.Error() }
func (e *schemaUnreadError) Unwrap() error { return e.err }

// retry is the backoff of one interpreter whose CRD schema could not be
// read.
type retry struct {
	delay   time.Duration
	pending bool
}

const (
	firstRetry = time.Second
	maxRetry   = time.Minute
)

// retryLater loads the named interpreter again after a delay that
// doubles, up to a minute, while its CRD's schema cannot be read; one
// retry is pending at a time.
func (l *Loader) retryLater(ctx context.Context, name string) {
	l.mu.Lock()
	r := l.retries[name]
	if r == nil {
		r = &retry{delay: firstRetry}
		l.retries[name] = r
	}
	if r.pending || l.Cache == nil {
		l.mu.Unlock()
		return
	}
	r.pending = true
	delay := r.delay
	r.delay = min(2*r.delay, maxRetry)
	l.mu.Unlock()
	time.AfterFunc(delay, func() {
		l.mu.Lock()
		r.pending = false
		l.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		wi := &v1alpha1.WorkloadInterpreter{}
		if err := l.Cache.Get(ctx, client.ObjectKey{Name: name}, wi); err != nil {
			return // deleted (unload took care of it) or the cache is stopping
		}
		l.load(ctx, wi)
	})
}

// retried forgets the backoff of an interpreter whose schema was read.
func (l *Loader) retried(name string) {
	l.mu.Lock()
	delete(l.retries, name)
	l.mu.Unlock()
}
