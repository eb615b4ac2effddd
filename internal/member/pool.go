package member

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"k8s.io/client-go/rest"
)

// Pool is the set of live members (push sessions and pull sessions), by
// MemberCluster name. The cluster controller starts and stops them; the
// propagation controllers look them up to reach members and subscribe to
// the events of the objects they manage there. Get and Names show only
// usable members (a push session whose claim on its member is verified),
// so nothing reaches a member that is not its MemberCluster's.
type Pool struct {
	mu       sync.Mutex
	m        map[string]Member
	closed   bool // after StopAll: no new sessions
	handlers []ObjectHandler
	pods     []UnschedulableHandler
	// OnChange, when set, is called with the number of sessions after each
	// change (for a metric).
	OnChange func(n int)
}

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{m: map[string]Member{}} }

// Subscribe registers h for the events of managed objects in every member.
// Call it before sessions start.
func (p *Pool) Subscribe(h ObjectHandler) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.handlers = append(p.handlers, h)
}

// SubscribeUnschedulable registers h for the pods that turn unschedulable
// in every member. Call it before sessions start.
func (p *Pool) SubscribeUnschedulable(h UnschedulableHandler) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods = append(p.pods, h)
}

// Get returns a member if it is usable, or nil.
func (p *Pool) Get(name string) Member {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.m[name]; s != nil && s.Usable() {
		return s
	}
	return nil
}

// Current returns a member whether or not it is usable yet, or nil; for
// the cluster controller, which owns the members.
func (p *Pool) Current(name string) Member {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m, ok := p.m[name]; ok {
		return m
	}
	return nil
}

// Start replaces the member name (stopping the old one) with a new push
// session; see the package function Start for the arguments.
func (p *Pool) Start(ctx context.Context, name, hash string, cfg *rest.Config, opts Options, initial *Observation, claim *Claim, notify func(context.Context)) (*Session, error) {
	var sess *Session
	_, err := p.Add(name, func(h Handlers) (Member, error) {
		s, err := Start(ctx, name, hash, cfg, opts, initial, claim, notify)
		if err != nil {
			return nil, err
		}
		s.onObject = h.Object
		s.mu.Lock()
		s.onUnschedulable = h.Unschedulable
		s.mu.Unlock()
		sess = s
		return s, nil
	})
	if err != nil {
		return nil, err
	}
	return sess, nil
}

// Add replaces the member name (stopping the old one) with the one start
// returns; start receives the handlers the member sends its events to.
func (p *Pool) Add(name string, start func(Handlers) (Member, error)) (Member, error) {
	p.Stop(name)
	p.mu.Lock()
	objects, pods := p.handlers, p.pods
	p.mu.Unlock()
	m, err := start(Handlers{
		Object: func(e ObjectEvent) {
			for _, h := range objects {
				h(e)
			}
		},
		Unschedulable: func(e UnschedulableEvent) {
			for _, h := range pods {
				h(e)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		m.Stop()
		return nil, fmt.Errorf("member %s not started: shutting down", name)
	}
	old := p.m[name]
	p.m[name] = m
	p.changed()
	p.mu.Unlock()
	if old != nil { // a concurrent start for the same name (not expected: one worker per key)
		old.Stop()
	}
	return m, nil
}

// Stop ends the member name, if any, and waits for its goroutines.
func (p *Pool) Stop(name string) {
	p.mu.Lock()
	sess := p.m[name]
	delete(p.m, name)
	p.changed()
	p.mu.Unlock()
	if sess != nil {
		sess.Stop()
	}
}

// StopAll stops every member; no new one starts afterwards.
func (p *Pool) StopAll() {
	p.mu.Lock()
	p.closed = true
	names := make([]string, 0, len(p.m))
	for name := range p.m {
		names = append(names, name)
	}
	p.mu.Unlock()
	for _, name := range names {
		p.Stop(name)
	}
}

// Names returns the names of the usable members, sorted.
func (p *Pool) Names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.m))
	for name, s := range p.m {
		if s.Usable() {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// changed reports the session count; p.mu is held.
func (p *Pool) changed() {
	if p.OnChange != nil {
		p.OnChange(len(p.m))
	}
}
