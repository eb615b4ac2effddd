package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// up and down are members in a domain.
func up(name, domain string) memberHealth {
	return memberHealth{name: name, domain: domain, ready: true}
}
func down(name, domain string) memberHealth { return memberHealth{name: name, domain: domain} }

func TestZoneStates(t *testing.T) {
	tests := []struct {
		name      string
		members   []memberHealth
		threshold float64
		want      map[string]zoneState
	}{
		{name: "all Ready", members: []memberHealth{up("a", "z1"), up("b", "z2")}, threshold: 0.55, want: map[string]zoneState{"z1": zoneNormal, "z2": zoneNormal}},
		{name: "a one-member zone down is fully disrupted", members: []memberHealth{down("a", "z1"), up("b", "z2")}, threshold: 0.55, want: map[string]zoneState{"z1": zoneFullDisruption, "z2": zoneNormal}},
		{name: "one of two down is Normal", members: []memberHealth{down("a", "z1"), up("b", "z1")}, threshold: 0.55, want: map[string]zoneState{"z1": zoneNormal}},
		{name: "one alone is never a partial disruption", members: []memberHealth{down("a", "z1"), up("b", "z1")}, threshold: 0.5, want: map[string]zoneState{"z1": zoneNormal}},
		{name: "two of three down is partial", members: []memberHealth{down("a", "z1"), down("b", "z1"), up("c", "z1")}, threshold: 0.55, want: map[string]zoneState{"z1": zonePartialDisruption}},
		{name: "two of four down is under 55%", members: []memberHealth{down("a", ""), down("b", ""), up("c", ""), up("d", "")}, threshold: 0.55, want: map[string]zoneState{"": zoneNormal}},
		{name: "two of four down reaches 50%", members: []memberHealth{down("a", ""), down("b", ""), up("c", ""), up("d", "")}, threshold: 0.5, want: map[string]zoneState{"": zonePartialDisruption}},
		{name: "all of a zone down is full", members: []memberHealth{down("a", "z1"), down("b", "z1"), down("c", "z1")}, threshold: 0.55, want: map[string]zoneState{"z1": zoneFullDisruption}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]zoneState{}
			for d, z := range zoneStates(tc.members, tc.threshold) {
				got[d] = z.state
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("zoneStates() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecideBrakes(t *testing.T) {
	defaults := DefaultFailover()
	noSmallRule := defaults
	noSmallRule.SmallFederationSize = 0
	halfZone := defaults
	halfZone.UnhealthyZoneThreshold = 0.5
	tests := []struct {
		name     string
		failover Failover
		members  []memberHealth // the first one is the member decided about
		downFor  time.Duration
		want     brakeDecision
		holdHas  string // a part of the hold's message
	}{
		{
			name:    "one of three zones down past the grace period: evicted",
			members: []memberHealth{down("m3", "eu-a"), up("m1", "us-a"), up("m2", "us-b")},
			downFor: time.Minute,
			want:    brakeDecision{allowed: true, grace: 30 * time.Second, due: true},
		},
		{
			name:    "one of three zones down within the grace period: later",
			members: []memberHealth{down("m3", "eu-a"), up("m1", "us-a"), up("m2", "us-b")},
			downFor: 10 * time.Second,
			want:    brakeDecision{allowed: true, grace: 30 * time.Second},
		},
		{
			name:    "two of three zones down: suppressed",
			members: []memberHealth{down("m3", "eu-a"), down("m1", "us-a"), up("m2", "us-b")},
			downFor: time.Hour,
			want:    brakeDecision{grace: 30 * time.Second, hold: &hold{reason: reasonSuppressed}},
			holdHas: `2 of 3 failure domains are disrupted ("eu-a" FullDisruption with 1 of 1 not Ready, "us-a" FullDisruption with 1 of 1 not Ready`,
		},
		{
			name:    "every member down: suppressed",
			members: []memberHealth{down("m1", "us-a"), down("m2", "us-b"), down("m3", "eu-a")},
			downFor: time.Hour,
			want:    brakeDecision{grace: 30 * time.Second, hold: &hold{reason: reasonSuppressed}},
		},
		{
			name:    "the only member: never evicted",
			members: []memberHealth{down("m1", "")},
			downFor: time.Hour,
			want:    brakeDecision{grace: 30 * time.Second, hold: &hold{reason: reasonSuppressed}},
		},
		{
			name:    "two members, one down past the grace period: held by the small-federation rule",
			members: []memberHealth{down("m2", "us-b"), up("m1", "us-a")},
			downFor: time.Minute,
			want:    brakeDecision{allowed: true, grace: 5 * time.Minute, hold: &hold{reason: reasonSmallFederation}},
			holdHas: "the federation has 2 member clusters (fewer than 3, --small-federation-size): a member not Ready is evicted after 5m0s",
		},
		{
			name:    "two members, one down within the ordinary grace period: not held yet",
			members: []memberHealth{down("m2", "us-b"), up("m1", "us-a")},
			downFor: 20 * time.Second,
			want:    brakeDecision{allowed: true, grace: 5 * time.Minute},
		},
		{
			name:    "two members, one down past the small-federation grace period: evicted",
			members: []memberHealth{down("m2", "us-b"), up("m1", "us-a")},
			downFor: 5 * time.Minute,
			want:    brakeDecision{allowed: true, grace: 5 * time.Minute, due: true},
		},
		{
			name:     "two members without the small-federation rule: evicted after the grace period",
			failover: noSmallRule,
			members:  []memberHealth{down("m2", "us-b"), up("m1", "us-a")},
			downFor:  time.Minute,
			want:     brakeDecision{allowed: true, grace: 30 * time.Second, due: true},
		},
		{
			name:    "two unlabelled members, one down: the small-federation rule too",
			members: []memberHealth{down("m2", ""), up("m1", "")},
			downFor: time.Minute,
			want:    brakeDecision{allowed: true, grace: 5 * time.Minute, hold: &hold{reason: reasonSmallFederation}},
		},
		{
			name:    "two of a zone's three members down, other zones healthy: held",
			members: []memberHealth{down("a1", "z-a"), down("a2", "z-a"), up("a3", "z-a"), up("b1", "z-b"), up("c1", "z-c")},
			downFor: time.Hour,
			want:    brakeDecision{grace: 30 * time.Second, hold: &hold{reason: reasonZonePartial}},
			holdHas: `2 of 3 member clusters of failure domain "z-a" are not Ready`,
		},
		{
			name:    "a zone fully down, other zones healthy: evicted",
			members: []memberHealth{down("a1", "z-a"), down("a2", "z-a"), up("b1", "z-b"), up("c1", "z-c")},
			downFor: time.Minute,
			want:    brakeDecision{allowed: true, grace: 30 * time.Second, due: true},
		},
		{
			name:    "a healthy zone's member is not held by another zone's partial disruption",
			members: []memberHealth{down("b1", "z-b"), down("a1", "z-a"), down("a2", "z-a"), up("a3", "z-a"), up("b2", "z-b"), up("b3", "z-b"), up("c1", "z-c")},
			downFor: time.Minute,
			want:    brakeDecision{allowed: true, grace: 30 * time.Second, due: true},
		},
		{
			name:    "unlabelled, one of three down: evicted",
			members: []memberHealth{down("m1", ""), up("m2", ""), up("m3", "")},
			downFor: time.Minute,
			want:    brakeDecision{allowed: true, grace: 30 * time.Second, due: true},
		},
		{
			name:    "unlabelled, two of three down: suppressed (the only domain is disrupted)",
			members: []memberHealth{down("m1", ""), down("m2", ""), up("m3", "")},
			downFor: time.Minute,
			want:    brakeDecision{grace: 30 * time.Second, hold: &hold{reason: reasonSuppressed}},
		},
		{
			name:    "unlabelled, two of four down: evicted",
			members: []memberHealth{down("m1", ""), down("m2", ""), up("m3", ""), up("m4", "")},
			downFor: time.Minute,
			want:    brakeDecision{allowed: true, grace: 30 * time.Second, due: true},
		},
		{
			name:     "unlabelled, two of four down at a 50% zone threshold: suppressed",
			failover: halfZone,
			members:  []memberHealth{down("m1", ""), down("m2", ""), up("m3", ""), up("m4", "")},
			downFor:  time.Minute,
			want:     brakeDecision{grace: 30 * time.Second, hold: &hold{reason: reasonSuppressed}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.failover
			if f == (Failover{}) {
				f = defaults
			}
			got := decideBrakes(f, tc.members, tc.members[0].name, tNow.Add(-tc.downFor), tNow)
			if tc.holdHas != "" && (got.hold == nil || !strings.Contains(got.hold.message, tc.holdHas)) {
				t.Errorf("hold %+v, want a message containing %q", got.hold, tc.holdHas)
			}
			if got.hold != nil {
				got.hold.message = "" // compared above
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(brakeDecision{}, hold{})); diff != "" {
				t.Errorf("decideBrakes() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMembersOf(t *testing.T) {
	mc := func(name string, ready, deleting bool, labels map[string]string) v1alpha1.MemberCluster {
		c := v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		status := metav1.ConditionFalse
		if ready {
			status = metav1.ConditionTrue
		}
		c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: status}}
		if deleting {
			ts := metav1.NewTime(tNow)
			c.DeletionTimestamp = &ts
		}
		return c
	}
	zone := map[string]string{corev1.LabelTopologyRegion: "us", corev1.LabelTopologyZone: "us-a"}
	region := map[string]string{corev1.LabelTopologyRegion: "eu"}
	all := []v1alpha1.MemberCluster{
		mc("a", true, false, zone),
		mc("b", false, true, nil),
		mc("c", false, false, region),
		mc("d", true, false, nil),
		mc("pending", false, false, zone),
		mc("accepted", true, false, zone),
	}
	// A pull member counts only once accepted.
	all[4].Spec.SyncMode = v1alpha1.SyncModePull
	all[5].Spec.SyncMode, all[5].Spec.Accepted = v1alpha1.SyncModePull, true
	got := membersOf(all, "a", false)
	want := []memberHealth{down("a", "us-a"), down("c", "eu"), up("d", ""), up("accepted", "us-a")}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(memberHealth{})); diff != "" {
		t.Errorf("membersOf() (-want +got):\n%s", diff)
	}
}
