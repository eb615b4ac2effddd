package cluster

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// zoneState is the health of a failure domain (a zone, or a region for
// members without a zone label), after the node lifecycle controller of
// Kubernetes.
type zoneState int

const (
	// zoneNormal: fewer than the unhealthy-zone threshold of its members
	// are not Ready (or only one is).
	zoneNormal zoneState = iota
	// zonePartialDisruption: at least the threshold of its members, and at
	// least two, are not Ready, but not all.
	zonePartialDisruption
	// zoneFullDisruption: none of its members is Ready.
	zoneFullDisruption
)

func (s zoneState) String() string {
	switch s {
	case zonePartialDisruption:
		return "PartialDisruption"
	case zoneFullDisruption:
		return "FullDisruption"
	default:
		return "Normal"
	}
}

// domainOf is a member's failure domain: its topology.kubernetes.io/zone
// label, else its topology.kubernetes.io/region label, else "" (members
// without either form one domain).
func domainOf(labels map[string]string) string {
	if z := labels[corev1.LabelTopologyZone]; z != "" {
		return z
	}
	return labels[corev1.LabelTopologyRegion]
}

// memberHealth is what the brakes know of one member.
type memberHealth struct {
	name   string
	domain string
	ready  bool
}

// membersOf lists the members not being deleted; self's readiness is
// selfReady (newer than its recorded status).
func membersOf(all []v1alpha1.MemberCluster, self string, selfReady bool) []memberHealth {
	out := make([]memberHealth, 0, len(all))
	for i := range all {
		c := &all[i]
		if !c.DeletionTimestamp.IsZero() || pending(c) {
			continue
		}
		ready := meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionReady)
		if c.Name == self {
			ready = selfReady
		}
		out = append(out, memberHealth{name: c.Name, domain: domainOf(c.Labels), ready: ready})
	}
	return out
}

// zone is one failure domain's counts and state.
type zone struct {
	total, notReady int
	state           zoneState
}

// zoneStates classifies every failure domain: FullDisruption when none of
// its members is Ready, PartialDisruption when at least threshold of them
// and at least two are not Ready, Normal otherwise.
func zoneStates(members []memberHealth, threshold float64) map[string]zone {
	zones := map[string]zone{}
	for _, m := range members {
		z := zones[m.domain]
		z.total++
		if !m.ready {
			z.notReady++
		}
		zones[m.domain] = z
	}
	for d, z := range zones {
		switch {
		case z.notReady == z.total:
			z.state = zoneFullDisruption
		case z.notReady >= 2 && float64(z.notReady) >= threshold*float64(z.total):
			z.state = zonePartialDisruption
		}
		zones[d] = z
	}
	return zones
}

// Reasons of the EvictionHeld condition (and of the Warning events that
// say an eviction is held back).
const (
	// reasonSuppressed: most failure domains are disrupted; the control
	// plane suspects its own connectivity.
	reasonSuppressed = "EvictionSuppressed"
	// reasonZonePartial: the member's failure domain is partially
	// disrupted.
	reasonZonePartial = "ZonePartialDisruption"
	// reasonSmallFederation: the federation is small; the member waits for
	// the longer grace period.
	reasonSmallFederation = "SmallFederation"
	// reasonRateLimited: another member was evicted moments ago.
	reasonRateLimited = "RateLimited"
)

// hold says why a member that is not Ready is not tainted NoExecute yet.
type hold struct {
	reason  string
	message string
}

// brakeDecision is what the failover brakes allow for one member that is
// not Ready.
type brakeDecision struct {
	// allowed is false when the member may not be evicted at all now.
	allowed bool
	// grace is how long the member must be not Ready before eviction.
	grace time.Duration
	// due is true when the grace period is over and eviction is allowed:
	// the member is evicted if the clusters-per-minute bucket has a token.
	due bool
	// hold is why the member is held back, nil when it is not.
	hold *hold
}

// decideBrakes applies the failover brakes to member self, not Ready
// since since, among members: no eviction while more than
// DisruptionThreshold of the failure domains are disrupted, or while
// self's own domain is partially disrupted; a longer grace period in a
// federation of fewer than SmallFederationSize members. A domain fully
// disrupted while most others are healthy is evicted: that is what
// failover is for.
func decideBrakes(f Failover, members []memberHealth, self string, since, now time.Time) brakeDecision {
	d := brakeDecision{grace: f.GracePeriod}
	zones := zoneStates(members, f.UnhealthyZoneThreshold)
	disrupted := 0
	for _, z := range zones {
		if z.state != zoneNormal {
			disrupted++
		}
	}
	if len(zones) > 0 && float64(disrupted) > f.DisruptionThreshold*float64(len(zones)) {
		d.hold = &hold{reason: reasonSuppressed, message: fmt.Sprintf(
			"%d of %d failure domains are disrupted (%s; more than %.0f%%, --cluster-failover-disruption-threshold): treating it as a problem of the control plane's own connectivity and evicting nothing",
			disrupted, len(zones), describeZones(zones), f.DisruptionThreshold*100)}
		return d
	}
	var domain string
	for _, m := range members {
		if m.name == self {
			domain = m.domain
		}
	}
	if z := zones[domain]; z.state == zonePartialDisruption {
		d.hold = &hold{reason: reasonZonePartial, message: fmt.Sprintf(
			"%d of %d member clusters of failure domain %s are not Ready (at least %.0f%%, --unhealthy-zone-threshold), but not all: evicting none of them until the domain is Normal or fully down",
			z.notReady, z.total, quoteDomain(domain), f.UnhealthyZoneThreshold*100)}
		return d
	}
	d.allowed = true
	if n := len(members); n < f.SmallFederationSize && f.SmallFederationGracePeriod > d.grace {
		d.grace = f.SmallFederationGracePeriod
		if at := since.Add(d.grace); now.Before(at) && !now.Before(since.Add(f.GracePeriod)) {
			d.hold = &hold{reason: reasonSmallFederation, message: fmt.Sprintf(
				"the federation has %d member clusters (fewer than %d, --small-federation-size): a member not Ready is evicted after %s (--small-federation-grace-period), not before %s, so that a short outage does not move everything onto the others",
				n, f.SmallFederationSize, d.grace, at.UTC().Format(time.RFC3339))}
		}
	}
	d.due = !now.Before(since.Add(d.grace))
	return d
}

// describeZones lists the domains that are not Normal, sorted.
func describeZones(zones map[string]zone) string {
	var parts []string
	for d, z := range zones {
		if z.state != zoneNormal {
			parts = append(parts, fmt.Sprintf("%s %s with %d of %d not Ready", quoteDomain(d), z.state, z.notReady, z.total))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// quoteDomain names a domain in messages.
func quoteDomain(d string) string {
	if d == "" {
		return "(members without zone or region labels)"
	}
	return fmt.Sprintf("%q", d)
}

// pending reports whether c is a pull member not accepted: not part of
// the fleet yet (or any more), so it counts in no failure domain.
func pending(c *v1alpha1.MemberCluster) bool {
	return c.Spec.SyncMode == v1alpha1.SyncModePull && !c.Spec.Accepted
}
