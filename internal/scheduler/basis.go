package scheduler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// Basis digests what a decision for u over clusters depends on (capacity
// limits included), leaving
// out what changes all the time without calling for a new decision (free
// capacity, the placement in force). profile identifies the profile and
// its webhooks. now decides which toleration periods have run out.
func Basis(u *framework.Unit, clusters []*v1alpha1.MemberCluster, profile string, now time.Time) string {
	type cluster struct {
		Name     string            `json:"n"`
		Labels   map[string]string `json:"l,omitempty"`
		Taints   []string          `json:"t,omitempty"`
		Deleting bool              `json:"d,omitempty"`
		Ready    bool              `json:"r,omitempty"`
		Serves   string            `json:"s,omitempty"`
	}
	in := struct {
		Profile   string              `json:"p"`
		GVK       string              `json:"k"`
		Replicas  *int32              `json:"r,omitempty"`
		Requests  corev1.ResourceList `json:"q,omitempty"`
		Placement *v1alpha1.Placement `json:"pl"`
		Limits    map[string]int32    `json:"lim,omitempty"`
		// Pod is the pod's node constraints (tolerations, node selector,
		// required affinity), which simulated room depends on; left out
		// when it has none, so such objects keep the basis they had.
		Pod      string    `json:"pod,omitempty"`
		Clusters []cluster `json:"c"`
	}{Profile: profile, GVK: u.GVK.String(), Replicas: u.Replicas, Requests: u.Requests, Placement: u.Placement, Limits: u.Limits}
	if u.Shape != nil && u.Shape.Constrained {
		in.Pod = u.Shape.ConstraintsKey
	}
	for _, c := range clusters {
		e := cluster{Name: c.Name, Labels: c.Labels, Deleting: !c.DeletionTimestamp.IsZero(),
			Ready: meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionReady), Serves: serves(c, u)}
		for _, t := range c.Spec.Taints {
			s := t.Key + "=" + t.Value + ":" + string(t.Effect)
			if expired(t, u.Placement.Tolerations, now) {
				s += ":expired"
			}
			e.Taints = append(e.Taints, s)
		}
		sort.Strings(e.Taints)
		in.Clusters = append(in.Clusters, e)
	}
	sort.Slice(in.Clusters, func(i, j int) bool { return in.Clusters[i].Name < in.Clusters[j].Name })
	b, _ := json.Marshal(in)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// NextExpiry returns when the next tolerated NoExecute taint's toleration
// period runs out on any of the clusters (zero when none will).
func NextExpiry(u *framework.Unit, clusters []*v1alpha1.MemberCluster, now time.Time) time.Time {
	var next time.Time
	for _, c := range clusters {
		for _, t := range c.Spec.Taints {
			if end, ok := tolerationEnd(t, u.Placement.Tolerations); ok && end.After(now) && (next.IsZero() || end.Before(next)) {
				next = end
			}
		}
	}
	return next
}

// serves says whether a cluster serves the unit's kind: "yes", "read-only"
// (served, but the member's RBAC does not let the control plane write it),
// "no", or "unknown" before its first discovery (which the APIEnablement
// filter lets pass), so that the discovery's answer, and a change of the
// member's grant, is a change of the basis.
func serves(c *v1alpha1.MemberCluster, u *framework.Unit) string {
	if len(c.Status.APIResources) == 0 {
		return "unknown"
	}
	for _, r := range c.Status.APIResources {
		if r.Group == u.GVK.Group && r.Version == u.GVK.Version && r.Kind == u.GVK.Kind {
			if r.ReadOnly {
				return "read-only"
			}
			return "yes"
		}
	}
	return "no"
}

func expired(t corev1.Taint, tolerations []corev1.Toleration, now time.Time) bool {
	end, ok := tolerationEnd(t, tolerations)
	return ok && !now.Before(end)
}

// maxTolerationSeconds is the longest toleration period taken literally
// (about 100 years); longer ones tolerate for ever (and cannot overflow).
const maxTolerationSeconds = 100 * 365 * 24 * 3600

// tolerationEnd is when a NoExecute taint stops being tolerated, for a
// toleration with tolerationSeconds; ok is false when it is not tolerated
// at all or tolerated for ever.
func tolerationEnd(t corev1.Taint, tolerations []corev1.Toleration) (time.Time, bool) {
	if t.Effect != corev1.TaintEffectNoExecute || t.TimeAdded == nil {
		return time.Time{}, false
	}
	// As the TaintToleration filter does: the shortest period of the
	// matching tolerations counts; a match without one tolerates for ever
	// only if no matching toleration has a period.
	var shortest *int64
	matched := false
	for i := range tolerations {
		tol := &tolerations[i]
		if !tol.ToleratesTaint(klog.Background(), &t, true) {
			continue
		}
		matched = true
		if s := tol.TolerationSeconds; s != nil && (shortest == nil || *s < *shortest) {
			shortest = s
		}
	}
	if !matched || shortest == nil || *shortest > maxTolerationSeconds {
		return time.Time{}, false
	}
	return t.TimeAdded.Add(time.Duration(*shortest) * time.Second), true
}
