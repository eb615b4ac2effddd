package webhook

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// The extension points *Plugin offers to framework.Build.
var (
	_ framework.BatchFilterPlugin = (*Plugin)(nil)
	_ framework.BatchScorePlugin  = (*Plugin)(nil)
	_ framework.SelectPlugin      = (*Plugin)(nil)
	_ framework.ReplicasPlugin    = (*Plugin)(nil)
)

// FilterAll asks the webhook which clusters may take u: one status per
// cluster, in order (nil when allowed, Unschedulable with the webhook's
// reason otherwise).
func (p *Plugin) FilterAll(ctx context.Context, u *framework.Unit, clusters []*v1alpha1.MemberCluster) ([]*framework.Status, error) {
	if err := p.configured(filterPoint); err != nil {
		return nil, err
	}
	statuses := make([]*framework.Status, len(clusters))
	if len(clusters) == 0 {
		return statuses, nil
	}
	var resp FilterResponse
	err := p.call(ctx, filterPoint, newRequest(u, compact(clusters), nil), &resp, func() error {
		if err := checkType(resp.TypeInfo, filterPoint); err != nil {
			return err
		}
		names := make([]string, len(resp.Results))
		for i, r := range resp.Results {
			names[i] = r.Cluster
		}
		return coversAll(names, clusterNames(clusters))
	})
	if err != nil {
		if p.ignored(ctx, filterPoint, err) {
			return statuses, nil
		}
		return nil, err
	}
	verdicts := make(map[string]FilterResult, len(resp.Results))
	for _, r := range resp.Results {
		verdicts[r.Cluster] = r
	}
	for i, c := range clusters {
		v := verdicts[c.Name]
		if v.Allowed {
			continue
		}
		reason := truncate(v.Reason)
		if reason == "" {
			reason = "rejected by " + p.Name()
		}
		statuses[i] = &framework.Status{Code: framework.Unschedulable, Reason: reason, Plugin: p.Name()}
	}
	return statuses, nil
}

// ScoreAll asks the webhook to score the clusters for u: one score per
// cluster, in order.
func (p *Plugin) ScoreAll(ctx context.Context, u *framework.Unit, clusters []*v1alpha1.MemberCluster) ([]int64, error) {
	if err := p.configured(scorePoint); err != nil {
		return nil, err
	}
	scores := make([]int64, len(clusters))
	if len(clusters) == 0 {
		return scores, nil
	}
	var resp ScoreResponse
	err := p.call(ctx, scorePoint, newRequest(u, compact(clusters), nil), &resp, func() error {
		if err := checkType(resp.TypeInfo, scorePoint); err != nil {
			return err
		}
		names := make([]string, len(resp.Scores))
		for i, s := range resp.Scores {
			if s.Score < 0 || s.Score > MaxScore {
				return fmt.Errorf("score %d for cluster %s is outside 0..%d", s.Score, truncate(s.Cluster), MaxScore)
			}
			names[i] = s.Cluster
		}
		return coversAll(names, clusterNames(clusters))
	})
	if err != nil {
		if p.ignored(ctx, scorePoint, err) {
			return scores, nil
		}
		return nil, err
	}
	byName := make(map[string]int64, len(resp.Scores))
	for _, s := range resp.Scores {
		byName[s.Cluster] = s.Score
	}
	for i, c := range clusters {
		scores[i] = byName[c.Name]
	}
	return scores, nil
}

// Select asks the webhook which of the ranked clusters to choose and
// returns them in ranking order; Unschedulable when it chooses none.
func (p *Plugin) Select(ctx context.Context, _ framework.CycleState, u *framework.Unit, ranked []framework.ScoredCluster) ([]framework.ScoredCluster, *framework.Status) {
	if err := p.configured(selectPoint); err != nil {
		return nil, framework.NewError(err)
	}
	if len(ranked) == 0 {
		return ranked, nil
	}
	clusters, scores := unscored(ranked)
	var resp SelectResponse
	err := p.call(ctx, selectPoint, newRequest(u, compact(clusters), scores), &resp, func() error {
		if err := checkType(resp.TypeInfo, selectPoint); err != nil {
			return err
		}
		return subset(resp.Clusters, clusterNames(clusters))
	})
	if err != nil {
		if p.ignored(ctx, selectPoint, err) {
			return ranked, nil
		}
		return nil, framework.NewError(err)
	}
	if len(resp.Clusters) == 0 {
		reason := truncate(resp.Reason)
		if reason == "" {
			reason = p.Name() + " selected no cluster"
		}
		return nil, &framework.Status{Code: framework.Unschedulable, Reason: reason, Plugin: p.Name()}
	}
	chosen := make(map[string]bool, len(resp.Clusters))
	for _, n := range resp.Clusters {
		chosen[n] = true
	}
	out := make([]framework.ScoredCluster, 0, len(resp.Clusters))
	for _, r := range ranked {
		if chosen[r.Cluster.Name] {
			out = append(out, r)
		}
	}
	return out, nil
}

// Replicas asks the webhook for u's placement on the chosen clusters and
// returns it sorted by cluster name. A failure fails the decision even
// under failurePolicy Ignore: no placement can be guessed.
func (p *Plugin) Replicas(ctx context.Context, _ framework.CycleState, u *framework.Unit, chosen []framework.ScoredCluster) ([]v1alpha1.ClusterPlacement, *framework.Status) {
	if err := p.configured(replicasPoint); err != nil {
		return nil, framework.NewError(err)
	}
	if len(chosen) == 0 {
		return []v1alpha1.ClusterPlacement{}, nil
	}
	divide := u.Placement != nil && u.Divide()
	clusters, scores := unscored(chosen)
	var resp ReplicasResponse
	err := p.call(ctx, replicasPoint, newRequest(u, compact(clusters), scores), &resp, func() error {
		if err := checkType(resp.TypeInfo, replicasPoint); err != nil {
			return err
		}
		if len(resp.Placement) == 0 && resp.Reason != "" {
			return nil // unschedulable, below
		}
		names := make([]string, len(resp.Placement))
		var sum int64
		for i, e := range resp.Placement {
			names[i] = e.Cluster
			if !divide {
				continue
			}
			switch {
			case e.Replicas == nil:
				return fmt.Errorf("response gives no replicas for cluster %s of a Divide unit", truncate(e.Cluster))
			case *e.Replicas < 0:
				return fmt.Errorf("replicas %d for cluster %s are negative", *e.Replicas, truncate(e.Cluster))
			}
			sum += int64(*e.Replicas)
		}
		if err := subset(names, clusterNames(clusters)); err != nil {
			return err
		}
		if divide && sum != int64(*u.Replicas) {
			return fmt.Errorf("replicas sum to %d, want %d", sum, *u.Replicas)
		}
		return nil
	})
	if err != nil {
		return nil, framework.NewError(err)
	}
	if len(resp.Placement) == 0 && resp.Reason != "" {
		return nil, &framework.Status{Code: framework.Unschedulable, Reason: truncate(resp.Reason), Plugin: p.Name()}
	}
	out := make([]v1alpha1.ClusterPlacement, len(resp.Placement))
	for i, e := range resp.Placement {
		out[i].Cluster = e.Cluster
		if divide {
			out[i].Replicas = e.Replicas
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster < out[j].Cluster })
	return out, nil
}

// newRequest describes u and the clusters; the caller sets the kind.
func newRequest(u *framework.Unit, clusters []Cluster, scores map[string]int64) *Request {
	current := u.Current
	if current == nil {
		current = []v1alpha1.ClusterPlacement{}
	}
	return &Request{
		Unit: Unit{
			Key:       u.Key,
			Group:     u.GVK.Group,
			Version:   u.GVK.Version,
			Kind:      u.GVK.Kind,
			Namespace: u.Namespace,
			Name:      u.Name,
			Replicas:  u.Replicas,
			Requests:  u.Requests,
			Placement: u.Placement,
			Current:   current,
		},
		Clusters: clusters,
		Scores:   scores,
	}
}

// compact turns MemberClusters into the payload's compact view.
func compact(clusters []*v1alpha1.MemberCluster) []Cluster {
	out := make([]Cluster, len(clusters))
	for i, c := range clusters {
		out[i] = Cluster{
			Name:      c.Name,
			Labels:    c.Labels,
			Taints:    c.Spec.Taints,
			Resources: c.Status.Resources,
			Ready:     meta.IsStatusConditionPresentAndEqual(c.Status.Conditions, v1alpha1.ConditionReady, metav1.ConditionTrue),
		}
	}
	return out
}

// unscored splits scored clusters into the clusters and their scores.
func unscored(scored []framework.ScoredCluster) ([]*v1alpha1.MemberCluster, map[string]int64) {
	clusters := make([]*v1alpha1.MemberCluster, len(scored))
	scores := make(map[string]int64, len(scored))
	for i, s := range scored {
		clusters[i] = s.Cluster
		scores[s.Cluster.Name] = s.Score
	}
	return clusters, scores
}

func clusterNames(clusters []*v1alpha1.MemberCluster) []string {
	names := make([]string, len(clusters))
	for i, c := range clusters {
		names[i] = c.Name
	}
	return names
}

// subset checks that got names only requested clusters, each at most once.
// Names from a response are cut (truncate) in errors, as reasons are.
func subset(got, requested []string) error {
	known := make(map[string]bool, len(requested))
	for _, n := range requested {
		known[n] = true
	}
	seen := make(map[string]bool, len(got))
	for _, n := range got {
		switch {
		case !known[n]:
			return fmt.Errorf("response names cluster %q, which was not requested", truncate(n))
		case seen[n]:
			return fmt.Errorf("response names cluster %s more than once", n)
		}
		seen[n] = true
	}
	return nil
}

// coversAll checks that got names every requested cluster exactly once.
func coversAll(got, requested []string) error {
	if err := subset(got, requested); err != nil {
		return err
	}
	seen := make(map[string]bool, len(got))
	for _, n := range got {
		seen[n] = true
	}
	var missing []string
	for _, n := range requested {
		if !seen[n] {
			missing = append(missing, n)
		}
	}
	switch {
	case len(missing) == 0:
		return nil
	case len(missing) == 1:
		return fmt.Errorf("response lacks cluster %s", missing[0])
	case len(missing) <= 3:
		return fmt.Errorf("response lacks clusters %s", strings.Join(missing, ", "))
	default:
		return fmt.Errorf("response lacks clusters %s and %d more", strings.Join(missing[:3], ", "), len(missing)-3)
	}
}
