package cluster

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/flotilla-io/flotilla/internal/member"
)

// sessions is the set of live member sessions, by MemberCluster name.
type sessions struct {
	mu     sync.Mutex
	m      map[string]*member.Session
	closed bool // after stopAll: no new sessions
}

func newSessions() *sessions { return &sessions{m: map[string]*member.Session{}} }

func (s *sessions) get(name string) *member.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[name]
}

// start replaces the session of name (stopping the old one) with a new one.
func (s *sessions) start(ctx context.Context, name, hash string, cfg *rest.Config, opts member.Options, initial *member.Observation, notify func(context.Context)) (*member.Session, error) {
	s.stop(name)
	sess, err := member.Start(ctx, name, hash, cfg, opts, initial, notify)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		sess.Stop()
		return nil, fmt.Errorf("session for %s not started: shutting down", name)
	}
	old := s.m[name]
	s.m[name] = sess
	sessionsGauge.Set(float64(len(s.m)))
	s.mu.Unlock()
	if old != nil { // a concurrent start for the same name (not expected: one worker per key)
		old.Stop()
	}
	return sess, nil
}

// stop ends the session of name, if any, and waits for its goroutines.
func (s *sessions) stop(name string) {
	s.mu.Lock()
	sess := s.m[name]
	delete(s.m, name)
	sessionsGauge.Set(float64(len(s.m)))
	s.mu.Unlock()
	if sess != nil {
		sess.Stop()
	}
}

func (s *sessions) stopAll() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	for _, name := range s.names() {
		s.stop(name)
	}
}

func (s *sessions) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.m))
	for name := range s.m {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
