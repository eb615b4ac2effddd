package copies

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
)

func cluster(ready metav1.ConditionStatus, deleting bool) *v1alpha1.MemberCluster {
	mc := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}
	if ready != "" {
		mc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: ready, Reason: "Probe", Message: "said so"}}
	}
	if deleting {
		now := metav1.Now()
		mc.DeletionTimestamp = &now
	}
	return mc
}

func TestUsable(t *testing.T) {
	tests := []struct {
		name string
		mc   *v1alpha1.MemberCluster
		want bool
		why  string
	}{
		{name: "ready", mc: cluster(metav1.ConditionTrue, false), want: true},
		{name: "missing", mc: nil, why: "MemberCluster m1 does not exist"},
		{name: "deleting", mc: cluster(metav1.ConditionTrue, true), why: "being deleted"},
		{name: "not ready", mc: cluster(metav1.ConditionFalse, false), why: "not Ready (Probe: said so)"},
		{name: "unknown", mc: cluster(metav1.ConditionUnknown, false), why: "not Ready"},
		{name: "no condition yet", mc: cluster("", false), why: "the cluster is not Ready"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Usable(tc.mc, "m1")
			if got != tc.want || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
				t.Errorf("Usable = %v, %q; want %v, containing %q", got, why, tc.want, tc.why)
			}
		})
	}
}

// sessions is a Sessions for unit tests.
type sessions map[string]*member.Session

func (s sessions) Get(name string) member.Member {
	if sess, ok := s[name]; ok {
		return sess
	}
	return nil
}

func TestSessionAndStates(t *testing.T) {
	sess := &member.Session{}
	pool := sessions{"m1": sess}
	tests := []struct {
		name                     string
		copy                     Copy
		starting, known, waiting bool
		wantSession              bool
	}{
		{name: "usable with session", copy: Session(pool, cluster(metav1.ConditionTrue, false), "m1"), wantSession: true},
		{name: "usable, session starting", copy: Session(sessions{}, cluster(metav1.ConditionTrue, false), "m1"), starting: true, waiting: true},
		{name: "not ready has no session", copy: Session(pool, cluster(metav1.ConditionFalse, false), "m1")},
		{name: "deleting has no session", copy: Session(pool, cluster(metav1.ConditionTrue, true), "m1")},
		{name: "synced cache", copy: Copy{looked: true, Session: sess, State: member.CacheSynced}, wantSession: true, known: true},
		{name: "syncing cache", copy: Copy{looked: true, Session: sess, State: member.CacheSyncing}, wantSession: true, waiting: true},
		{name: "stalled cache", copy: Copy{looked: true, Session: sess, State: member.CacheStalled}, wantSession: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.copy
			if (c.Session != nil) != tc.wantSession || c.Starting() != tc.starting || c.Known() != tc.known || c.Waiting() != tc.waiting {
				t.Errorf("session %v starting %v known %v waiting %v; want %v %v %v %v",
					c.Session != nil, c.Starting(), c.Known(), c.Waiting(), tc.wantSession, tc.starting, tc.known, tc.waiting)
			}
			if c.Session == nil && c.Why == "" {
				t.Error("no session and no reason")
			}
		})
	}
}
