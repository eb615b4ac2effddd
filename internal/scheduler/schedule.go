package scheduler

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/replicas"
)

// Input is what one scheduling decision is based on.
type Input struct {
	// Policy is the propagation policy's spec.
	Policy *v1alpha1.PropagationSpec
	// Replicas is the object's replica count; nil when it has none.
	Replicas *int32
	// Clusters are all MemberClusters.
	Clusters []v1alpha1.MemberCluster
	// Current is the placement in force.
	Current []v1alpha1.ClusterPlacement
	// Seed breaks ties reproducibly (the FederatedObject's name).
	Seed string
}

// Result is a decision.
type Result struct {
	// Placement is the chosen clusters in name order with their replicas
	// (Divide only).
	Placement []v1alpha1.ClusterPlacement
	// Message explains it, e.g. "2/3 clusters: member-3 untolerated taint
	// flotilla.io/unreachable:NoSchedule".
	Message string
}

// Schedule places an object. A cluster is a candidate when it is not being
// deleted and matches the policy's cluster names and selector. A taint with
// effect NoSchedule keeps the object off a cluster it is not on yet (a
// cluster already holding it keeps it, and in Divide mode gets no more
// replicas than it has); NoExecute removes it. In Divide mode the
// replicas are split by the policy's static weights within each cluster's
// min/max; clusters that get none are left out unless the total is 0.
func Schedule(in Input) Result {
	current := map[string]v1alpha1.ClusterPlacement{}
	for _, p := range in.Current {
		current[p.Cluster] = p
	}
	var eligible []v1alpha1.MemberCluster
	var excluded []string
	total := 0
	clusters := slices.Clone(in.Clusters)
	sort.Slice(clusters, func(i, j int) bool { return clusters[i].Name < clusters[j].Name })
	for _, c := range clusters {
		if !matchesPlacement(in.Policy.Placement, &c) {
			continue
		}
		total++
		if !c.DeletionTimestamp.IsZero() {
			excluded = append(excluded, c.Name+" is being deleted")
			continue
		}
		if t := blockingTaint(c.Spec.Taints, current[c.Name].Cluster != ""); t != nil {
			excluded = append(excluded, fmt.Sprintf("%s untolerated taint %s:%s", c.Name, t.Key, t.Effect))
			continue
		}
		eligible = append(eligible, c)
	}
	res := Result{}
	divide := in.Policy.Placement.ReplicaScheduling.Type == v1alpha1.ReplicaSchedulingDivide && in.Replicas != nil
	if divide {
		res.Placement = divideReplicas(in, eligible, current)
	} else {
		for _, c := range eligible {
			res.Placement = append(res.Placement, v1alpha1.ClusterPlacement{Cluster: c.Name})
		}
	}
	res.Message = fmt.Sprintf("%d/%d clusters", len(res.Placement), total)
	if len(excluded) > 0 {
		res.Message += ": " + strings.Join(excluded, ", ")
	}
	if total == 0 {
		res.Message = "no MemberCluster matches the policy's placement"
	}
	return res
}

func divideReplicas(in Input, eligible []v1alpha1.MemberCluster, current map[string]v1alpha1.ClusterPlacement) []v1alpha1.ClusterPlacement {
	weights := in.Policy.Placement.ReplicaScheduling.Weights
	targets := make([]replicas.Target, 0, len(eligible))
	for _, c := range eligible {
		t := replicas.Target{Name: c.Name, Weight: 1, Max: replicas.NoMax}
		if len(weights) > 0 {
			t.Weight = 0
			for _, w := range weights {
				if w.Cluster != c.Name {
					continue
				}
				t.Weight = float64(w.Weight)
				if w.MinReplicas != nil {
					t.Min = int64(*w.MinReplicas)
				}
				if w.MaxReplicas != nil {
					t.Max = int64(*w.MaxReplicas)
				}
			}
		}
		if len(weights) > 0 && t.Weight == 0 && t.Min == 0 {
			continue // no entry (or weight 0): no replicas
		}
		if held, ok := current[c.Name]; ok && held.Replicas != nil && hasTaint(c.Spec.Taints, corev1.TaintEffectNoSchedule) {
			// Keeps what it has, gets no more.
			n := int64(ptr.Deref(held.Replicas, 0))
			if t.Max == replicas.NoMax || t.Max > n {
				t.Max = n
			}
			t.Min = min(t.Min, t.Max)
		}
		targets = append(targets, t)
	}
	total := int64(*in.Replicas)
	split := replicas.Split(total, targets, in.Seed)
	var out []v1alpha1.ClusterPlacement
	for i, t := range targets {
		if split[i] == 0 && total > 0 {
			continue
		}
		out = append(out, v1alpha1.ClusterPlacement{Cluster: t.Name, Replicas: ptr.To(int32(split[i]))})
	}
	return out
}

func matchesPlacement(p v1alpha1.Placement, c *v1alpha1.MemberCluster) bool {
	if len(p.ClusterNames) > 0 && !slices.Contains(p.ClusterNames, c.Name) {
		return false
	}
	if p.ClusterSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(p.ClusterSelector)
		if err != nil || !sel.Matches(labels.Set(c.Labels)) {
			return false
		}
	}
	return true
}

// blockingTaint returns the taint that keeps the object off a cluster, or
// nil: NoExecute always, NoSchedule unless the object is already there.
func blockingTaint(taints []corev1.Taint, placed bool) *corev1.Taint {
	for i, t := range taints {
		if t.Effect == corev1.TaintEffectNoExecute || (t.Effect == corev1.TaintEffectNoSchedule && !placed) {
			return &taints[i]
		}
	}
	return nil
}

func hasTaint(taints []corev1.Taint, effect corev1.TaintEffect) bool {
	for _, t := range taints {
		if t.Effect == effect {
			return true
		}
	}
	return false
}
