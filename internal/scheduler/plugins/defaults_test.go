package plugins_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// TestDefaultProfileFromSchedule ports the table test of the scheduler the
// framework replaced: the same inputs through the default profile, with
// the framework's messages.
func TestDefaultProfileFromSchedule(t *testing.T) {
	runCases(t, []scheduleCase{
		{name: "duplicate over all clusters", clusters: three(), want: "member-1 member-2 member-3", msg: "3/3 clusters"},
		{name: "duplicate ignores the object's replicas", replicas: n(5), clusters: three(),
			want: "member-1 member-2 member-3", msg: "3/3 clusters"},
		{name: "cluster names", placement: policy(names("member-3", "member-1")), clusters: three(),
			want: "member-1 member-3", msg: "2/3 clusters; excluded: 1 not in clusterNames", excluded: "member-2"},
		{name: "cluster selector", placement: policy(selector("region", "eu")), clusters: three(),
			want: "member-1 member-2", msg: "2/3 clusters; excluded: 1 do not match clusterSelector", excluded: "member-3"},
		{name: "names and selector intersect", placement: policy(names("member-1", "member-3"), selector("region", "eu")), clusters: three(),
			want: "member-1", msg: "1/3 clusters; excluded: 1 do not match clusterSelector, 1 not in clusterNames", excluded: "member-2 member-3"},
		{name: "invalid selector fails the decision", clusters: three(), placement: policy(func(p *v1alpha1.Placement) {
			p.ClusterSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Bogus"}}}
		}), err: `Placement: clusterSelector: "Bogus" is not a valid label selector operator`},
		{name: "no cluster matches", placement: policy(names("member-9")), clusters: three(),
			msg: "0/3 clusters available: 3 not in clusterNames", excluded: "member-1 member-2 member-3"},
		{name: "no clusters at all", placement: policy(divide()), replicas: n(3), msg: "0/0 clusters available"},
		{name: "cluster being deleted is excluded", clusters: with(three(), 1, deleting),
			want: "member-1 member-3", msg: "2/3 clusters; excluded: 1 being deleted", excluded: "member-2"},
		{name: "cluster being deleted is excluded even where placed", clusters: with(three()[:2], 1, deleting), current: "member-1 member-2",
			want: "member-1", msg: "1/2 clusters; excluded: 1 being deleted", excluded: "member-2"},
		{name: "every candidate excluded", clusters: with(three()[:1], 0, deleting),
			msg: "0/1 clusters available: 1 being deleted", excluded: "member-1"},
		{name: "NoSchedule keeps a new cluster out", clusters: three(taints(unreachable)),
			want: "member-1 member-2", msg: "2/3 clusters; excluded: 1 untolerated taint flotilla.io/unreachable", excluded: "member-3"},
		{name: "NoSchedule keeps a placed cluster", clusters: three(taints(unreachable)), current: "member-3",
			want: "member-1 member-2 member-3", msg: "3/3 clusters"},
		{name: "NoExecute removes a placed cluster", clusters: three(taints(notReady)), current: "member-1 member-2 member-3",
			want: "member-1 member-2", msg: "2/3 clusters; excluded: 1 untolerated taint flotilla.io/not-ready", excluded: "member-3"},
		{name: "PreferNoSchedule does not block", clusters: three(taints(preferNot)), want: "member-1 member-2 member-3", msg: "3/3 clusters"},
		{name: "first blocking taint is reported", clusters: three(taints(preferNot, unreachable, notReady)),
			want: "member-1 member-2", msg: "2/3 clusters; excluded: 1 untolerated taint flotilla.io/unreachable", excluded: "member-3"},
		{name: "several exclusions", clusters: with(three(taints(notReady)), 0, deleting),
			want: "member-2", msg: "1/3 clusters; excluded: 1 being deleted, 1 untolerated taint flotilla.io/not-ready", excluded: "member-1 member-3"},
		{name: "divide 6 over 3 equal clusters", placement: policy(divide()), replicas: n(6), clusters: three(),
			want: "member-1=2 member-2=2 member-3=2", msg: "3/3 clusters"},
		{name: "divide 2 over 3: clusters that get none are left out", placement: policy(divide()), replicas: n(2), clusters: three(),
			want: "member-1=1 member-3=1", msg: "2/3 clusters"},
		{name: "divide 9 over 3 equal clusters", placement: policy(divide()), replicas: n(9), clusters: three(),
			want: "member-1=3 member-2=3 member-3=3", msg: "3/3 clusters"},
		{name: "divide over the selected clusters only", placement: policy(divide(), selector("region", "eu")), replicas: n(6), clusters: three(),
			want: "member-1=3 member-2=3", msg: "2/3 clusters; excluded: 1 do not match clusterSelector", excluded: "member-3"},
		{name: "divide skips a NoSchedule cluster it is not on", placement: policy(divide()), replicas: n(6), clusters: three(taints(unreachable)),
			want: "member-1=3 member-2=3", msg: "2/3 clusters; excluded: 1 untolerated taint flotilla.io/unreachable", excluded: "member-3"},
		{name: "weights 2:1", placement: policy(divide(weight("member-1", 2), weight("member-2", 1)), names("member-1", "member-2")),
			replicas: n(6), clusters: three(), want: "member-1=4 member-2=2", msg: "2/3 clusters; excluded: 1 not in clusterNames", excluded: "member-3"},
		{name: "unlisted clusters get no replicas and are left out", placement: policy(divide(weight("member-1", 2), weight("member-2", 1))),
			replicas: n(9), clusters: three(), want: "member-1=6 member-2=3", msg: "2/3 clusters"},
		{name: "weight entries for unknown clusters are ignored", placement: policy(divide(weight("member-1", 1), weight("member-9", 100), weight("member-3", 1))),
			replicas: n(4), clusters: three(), want: "member-1=2 member-3=2", msg: "2/3 clusters"},
		{name: "max caps a cluster, the rest goes to the others", placement: policy(divide(bounded("member-1", 1, nil, n(2)), weight("member-2", 1), weight("member-3", 1))),
			replicas: n(10), clusters: three(), want: "member-1=2 member-2=4 member-3=4", msg: "3/3 clusters"},
		{name: "min raises a cluster", placement: policy(divide(bounded("member-1", 1, n(4), nil), weight("member-2", 1), weight("member-3", 1))),
			replicas: n(6), clusters: three(), want: "member-1=4 member-2=1 member-3=1", msg: "3/3 clusters"},
		{name: "min gives a zero-weight cluster replicas", placement: policy(divide(weight("member-1", 1), bounded("member-2", 0, n(2), nil))),
			replicas: n(6), clusters: three(), want: "member-1=4 member-2=2", msg: "2/3 clusters"},
		{name: "maximums that cannot hold the total", placement: policy(divide(bounded("member-1", 1, nil, n(1)), bounded("member-2", 1, nil, n(2))), names("member-1", "member-2")),
			replicas: n(10), clusters: three(), want: "member-1=1 member-2=2", msg: "2/3 clusters; excluded: 1 not in clusterNames; 3 of 10 replicas placed: no chosen cluster can take the other 7 (maxReplicas, NoSchedule taints)", excluded: "member-3"},
		{name: "NoSchedule cluster holding 3 keeps at most 3 on scale up", placement: policy(divide()), replicas: n(15), clusters: three(taints(unreachable)),
			current: "member-1=3 member-2=3 member-3=3", want: "member-1=6 member-2=6 member-3=3", msg: "3/3 clusters"},
		{name: "NoSchedule cluster holding 3 shrinks on scale down", placement: policy(divide()), replicas: n(3), clusters: three(taints(unreachable)),
			current: "member-1=3 member-2=3 member-3=3", want: "member-1=1 member-2=1 member-3=1", msg: "3/3 clusters"},
		{name: "NoSchedule cap lowers a weight's max", placement: policy(divide(weight("member-1", 1), weight("member-2", 1), bounded("member-3", 1, n(5), n(10)))),
			replicas: n(12), clusters: three(taints(unreachable)), current: "member-3=2", want: "member-1=5 member-2=5 member-3=2", msg: "3/3 clusters"},
		{name: "NoExecute cluster holding replicas loses them", placement: policy(divide()), replicas: n(6), clusters: three(taints(notReady)),
			current: "member-1=2 member-2=2 member-3=2", want: "member-1=3 member-2=3",
			msg: "2/3 clusters; excluded: 1 untolerated taint flotilla.io/not-ready", excluded: "member-3"},
		{name: "total 0 keeps every cluster with 0", placement: policy(divide()), replicas: n(0), clusters: three(),
			want: "member-1=0 member-2=0 member-3=0", msg: "3/3 clusters"},
		{name: "total 0 keeps the weighted clusters with 0, unlisted ones are not placed", placement: policy(divide(weight("member-1", 1))),
			replicas: n(0), clusters: three(), want: "member-1=0", msg: "1/3 clusters"},
		{name: "capped weighted clusters do not spill into unlisted ones", placement: policy(divide(bounded("member-1", 1, nil, n(1)), bounded("member-2", 1, nil, n(2)))),
			replicas: n(10), clusters: three(), want: "member-1=1 member-2=2", msg: "2/3 clusters; 3 of 10 replicas placed: no chosen cluster can take the other 7 (maxReplicas, NoSchedule taints)"},
		{name: "divide without replicas behaves like duplicate", placement: policy(divide(weight("member-1", 1))), clusters: three(taints(unreachable)),
			want: "member-1 member-2", msg: "2/3 clusters; excluded: 1 untolerated taint flotilla.io/unreachable", excluded: "member-3"},
	})
}

// TestDefaultProfileFilters covers what the old scheduler could not do:
// tolerations, readiness, API enablement and required cluster affinity,
// with the explanation grouping and counting the reasons.
func TestDefaultProfileFilters(t *testing.T) {
	anHourAgo := metav1.NewTime(time.Now().Add(-time.Hour))
	staleNotReady := corev1.Taint{Key: v1alpha1.TaintNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &anHourAgo}
	configMapOnly := serving(served[0])
	runCases(t, []scheduleCase{
		{name: "a toleration lets a NoSchedule cluster in", clusters: three(taints(unreachable)), placement: policy(tolerate(v1alpha1.TaintUnreachable, nil)),
			want: "member-1 member-2 member-3", msg: "3/3 clusters"},
		{name: "a tolerated NoSchedule cluster gets its full share", clusters: three(taints(unreachable)), replicas: n(9), current: "member-3=1",
			placement: policy(divide(), tolerate(v1alpha1.TaintUnreachable, nil)), want: "member-1=3 member-2=3 member-3=3", msg: "3/3 clusters"},
		{name: "a toleration for another key does not help", clusters: three(taints(unreachable)), placement: policy(tolerate("example.com/other", nil)),
			want: "member-1 member-2", msg: "2/3 clusters; excluded: 1 untolerated taint flotilla.io/unreachable", excluded: "member-3"},
		{name: "NoExecute tolerated for a while keeps a cluster", clusters: three(taints(staleNotReady)), current: "member-3",
			placement: policy(tolerate(v1alpha1.TaintNotReady, ptr.To[int64](7200))), want: "member-1 member-2 member-3", msg: "3/3 clusters"},
		{name: "NoExecute toleration that ran out excludes", clusters: three(taints(staleNotReady)), current: "member-3",
			placement: policy(tolerate(v1alpha1.TaintNotReady, ptr.To[int64](300))),
			want:      "member-1 member-2", msg: "2/3 clusters; excluded: 1 untolerated taint flotilla.io/not-ready", excluded: "member-3"},
		{name: "a cluster that is not Ready gets no new object", clusters: three(unready),
			want: "member-1 member-2", msg: "2/3 clusters; excluded: 1 not Ready", excluded: "member-3"},
		{name: "a cluster that is not Ready keeps what it holds", clusters: three(unready), current: "member-3",
			want: "member-1 member-2 member-3", msg: "3/3 clusters"},
		{name: "a cluster that does not serve the kind", clusters: with(three(), 1, configMapOnly),
			want: "member-1 member-3", msg: "2/3 clusters; excluded: 1 do not serve apps/v1 Deployment", excluded: "member-2"},
		{name: "a cluster that does not serve the kind even where placed", clusters: with(three(), 1, configMapOnly), current: "member-1 member-2 member-3",
			want: "member-1 member-3", msg: "2/3 clusters; excluded: 1 do not serve apps/v1 Deployment", excluded: "member-2"},
		{name: "undiscovered resources pass", clusters: with(three(), 1, serving()), want: "member-1 member-2 member-3", msg: "3/3 clusters"},
		{name: "no cluster serves the kind", clusters: with(three(configMapOnly), 0, configMapOnly), placement: policy(names("member-1", "member-3")),
			msg: "0/3 clusters available: 2 do not serve apps/v1 Deployment, 1 not in clusterNames", excluded: "member-1 member-2 member-3"},
		{name: "the explanation groups and counts reasons, first filter first",
			clusters: []*v1alpha1.MemberCluster{
				cluster("a", nil, deleting, configMapOnly), cluster("b", nil, configMapOnly), cluster("c", nil, configMapOnly, taints(unreachable)),
				cluster("d", nil, taints(unreachable), unready), cluster("e", nil, unready), cluster("f", nil, taints(notReady)), cluster("g", nil, unready),
			},
			msg:      "0/7 clusters available: 2 do not serve apps/v1 Deployment, 2 not Ready, 1 being deleted, 1 untolerated taint flotilla.io/not-ready, 1 untolerated taint flotilla.io/unreachable",
			excluded: "a b c d e f g"},
		{name: "required In", placement: policy(require("region In us")), clusters: three(),
			want: "member-3", msg: "1/3 clusters; excluded: 2 do not match required cluster affinity", excluded: "member-1 member-2"},
		{name: "required NotIn", placement: policy(require("region NotIn us,ap")), clusters: three(),
			want: "member-1 member-2", msg: "2/3 clusters; excluded: 1 do not match required cluster affinity", excluded: "member-3"},
		{name: "required Exists", placement: policy(require("gpu Exists")), clusters: three(),
			want: "member-3", msg: "1/3 clusters; excluded: 2 do not match required cluster affinity", excluded: "member-1 member-2"},
		{name: "required Gt", placement: policy(require("generation Gt 4")), clusters: three(),
			want: "member-2 member-3", msg: "2/3 clusters; excluded: 1 do not match required cluster affinity", excluded: "member-1"},
		{name: "required expressions of a term all hold", placement: policy(require("region In eu", "generation Gt 4")), clusters: three(),
			want: "member-2", msg: "1/3 clusters; excluded: 2 do not match required cluster affinity", excluded: "member-1 member-3"},
		{name: "required terms are alternatives", placement: policy(require("gpu Exists"), require("generation Lt 4")), clusters: three(),
			want: "member-1 member-3", msg: "2/3 clusters; excluded: 1 do not match required cluster affinity", excluded: "member-2"},
		{name: "required affinity and clusterNames", placement: policy(require("region In eu"), names("member-2", "member-3")), clusters: three(),
			want: "member-2", msg: "1/3 clusters; excluded: 1 do not match required cluster affinity, 1 not in clusterNames", excluded: "member-1 member-3"},
		{name: "invalid affinity fails the decision", placement: policy(require("region Bogus eu")), clusters: three(),
			err: `ClusterAffinity: clusterAffinity.requiredTerms[0].matchExpressions[0]: unknown operator "Bogus"`},
	})
}

// TestDefaultProfileSelect covers scoring and selection: three() ranks
// member-1, member-2, member-3 by free capacity (LeastAllocated).
func TestDefaultProfileSelect(t *testing.T) {
	runCases(t, []scheduleCase{
		{name: "maxClusters keeps the clusters with the most free capacity", placement: policy(maxClusters(2)), clusters: three(),
			want: "member-1 member-2", msg: "2/3 clusters"},
		{name: "preferred affinity outweighs free capacity", placement: policy(maxClusters(1), prefer(10, "region In us")), clusters: three(),
			want: "member-3", msg: "1/3 clusters"},
		{name: "the matched share of preferred weights ranks", placement: policy(maxClusters(1), prefer(30, "gpu Exists"), prefer(70, "region In eu", "generation Gt 4")), clusters: three(),
			want: "member-2", msg: "1/3 clusters"},
		{name: "PreferNoSchedule taints lower the score", placement: policy(maxClusters(1)),
			clusters: with(three(), 0, taints(preferNot, corev1.Taint{Key: "a", Effect: corev1.TaintEffectPreferNoSchedule},
				corev1.Taint{Key: "b", Effect: corev1.TaintEffectPreferNoSchedule}, corev1.Taint{Key: "c", Effect: corev1.TaintEffectPreferNoSchedule})),
			want: "member-2", msg: "1/3 clusters"},
		{name: "maxClusters and divide", placement: policy(maxClusters(2), divide()), replicas: n(7), clusters: three(),
			want: "member-1=4 member-2=3", msg: "2/3 clusters"},
		{name: "spread minGroups with maxClusters picks one cluster per region", placement: policy(maxClusters(2), spreadOver("region", 2)), clusters: three(),
			want: "member-1 member-3", msg: "2/3 clusters"},
		{name: "spread drops clusters without the label", placement: policy(spreadOver("gpu", 1)), clusters: three(), want: "member-3", msg: "1/3 clusters"},
		{name: "spread needs more groups than there are", placement: policy(spreadOver("region", 3)), clusters: three(),
			msg: "0/3 clusters chosen: spread over region needs 3 groups, 2 available"},
		{name: "spread needs groups that filters excluded", placement: policy(maxClusters(2), spreadOver("region", 2)), clusters: three(taints(unreachable)),
			msg: "0/3 clusters chosen: spread over region needs 2 groups, 1 available; excluded: 1 untolerated taint flotilla.io/unreachable", excluded: "member-3"},
		{name: "no chosen cluster has a weight", placement: policy(divide(weight("member-9", 1))), replicas: n(3), clusters: three(),
			msg: "no replica plan: none of the 3 chosen clusters has a replica weight"},
	})
}

// TestDefaultProfileAvoidDisruption runs the seed's example through the
// profile: member-1 and member-2 run 15 each, member-3 has just joined.
func TestDefaultProfileAvoidDisruption(t *testing.T) {
	const current = "member-1=15 member-2=15 member-3=0"
	runCases(t, []scheduleCase{
		{name: "30 to 15 shrinks the two clusters above their share", placement: policy(divide()), replicas: n(15), current: current, clusters: three(),
			want: "member-1=7 member-2=8", msg: "2/3 clusters"},
		{name: "30 to 36 gives the new cluster the 6 new replicas", placement: policy(divide()), replicas: n(36), current: current, clusters: three(),
			want: "member-1=15 member-2=15 member-3=6", msg: "3/3 clusters"},
		{name: "30 stays 15/15", placement: policy(divide()), replicas: n(30), current: current, clusters: three(),
			want: "member-1=15 member-2=15", msg: "2/3 clusters"},
		{name: "without avoidDisruption 15 is 5/5/5", placement: policy(divide(), avoidDisruption(false)), replicas: n(15), current: current, clusters: three(),
			want: "member-1=5 member-2=5 member-3=5", msg: "3/3 clusters"},
		{name: "without avoidDisruption 36 is 12/12/12", placement: policy(divide(), avoidDisruption(false)), replicas: n(36), current: current, clusters: three(),
			want: "member-1=12 member-2=12 member-3=12", msg: "3/3 clusters"},
	})
}

// TestDefaultProfileAnnotations narrows the policy with the object's
// annotations, as scheduler.NewUnit does: they never widen it.
func TestDefaultProfileAnnotations(t *testing.T) {
	names12 := policy(names("member-1", "member-2"))
	ann := func(k, v string) map[string]string { return map[string]string{k: v} }
	runCases(t, []scheduleCase{
		{name: "cluster-names narrows clusterNames", placement: names12, annotations: ann(v1alpha1.AnnotationClusterNames, "member-2"), clusters: three(),
			want: "member-2", msg: "1/3 clusters; excluded: 2 not in clusterNames", excluded: "member-1 member-3"},
		{name: "cluster-names cannot add a cluster clusterNames excludes", placement: names12, annotations: ann(v1alpha1.AnnotationClusterNames, "member-2, member-3"),
			clusters: three(), want: "member-2", msg: "1/3 clusters; excluded: 2 not in clusterNames", excluded: "member-1 member-3"},
		{name: "cluster-names naming only excluded clusters matches none", placement: names12, annotations: ann(v1alpha1.AnnotationClusterNames, "member-3"),
			clusters: three(), msg: "0/3 clusters available: 3 not in clusterNames", excluded: "member-1 member-2 member-3"},
		{name: "cluster-names without clusterNames", annotations: ann(v1alpha1.AnnotationClusterNames, "member-3,member-1"), clusters: three(),
			want: "member-1 member-3", msg: "2/3 clusters; excluded: 1 not in clusterNames", excluded: "member-2"},
		{name: "cluster-names cannot escape the selector", placement: policy(selector("region", "eu")), annotations: ann(v1alpha1.AnnotationClusterNames, "member-3"),
			clusters: three(), msg: "0/3 clusters available: 2 not in clusterNames, 1 do not match clusterSelector", excluded: "member-1 member-2 member-3"},
		{name: "max-clusters lowers maxClusters", placement: policy(maxClusters(2)), annotations: ann(v1alpha1.AnnotationMaxClusters, "1"), clusters: three(),
			want: "member-1", msg: "1/3 clusters"},
		{name: "max-clusters cannot raise maxClusters", placement: policy(maxClusters(1)), annotations: ann(v1alpha1.AnnotationMaxClusters, "3"), clusters: three(),
			want: "member-1", msg: "1/3 clusters"},
		{name: "max-clusters without maxClusters", annotations: ann(v1alpha1.AnnotationMaxClusters, " 2 "), clusters: three(),
			want: "member-1 member-2", msg: "2/3 clusters"},
		{name: "max-clusters out of int32 range is ignored", annotations: ann(v1alpha1.AnnotationMaxClusters, "4294967296"), clusters: three(),
			want: "member-1 member-2 member-3", msg: "3/3 clusters"},
		{name: "max-clusters 2^32+1 does not narrow to 1", placement: policy(maxClusters(2)), annotations: ann(v1alpha1.AnnotationMaxClusters, "4294967297"),
			clusters: three(), want: "member-1 member-2", msg: "2/3 clusters"},
		{name: "max-clusters 0 is ignored", annotations: ann(v1alpha1.AnnotationMaxClusters, "0"), clusters: three(),
			want: "member-1 member-2 member-3", msg: "3/3 clusters"},
		{name: "max-clusters that is not a number is ignored", placement: policy(maxClusters(2)), annotations: ann(v1alpha1.AnnotationMaxClusters, "all"),
			clusters: three(), want: "member-1 member-2", msg: "2/3 clusters"},
	})
}

// TestDefaultProfileIsDeterministic schedules the same inputs with the
// clusters and the current placement in other orders.
func TestDefaultProfileIsDeterministic(t *testing.T) {
	clusters := []*v1alpha1.MemberCluster{cluster("a", nil), cluster("b", nil), cluster("c", nil, taints(unreachable)),
		cluster("d", nil), cluster("e", nil, taints(notReady)), cluster("f", nil, deleting)}
	reversed := slices.Clone(clusters)
	slices.Reverse(reversed)
	orders := []scheduleCase{{name: "given", clusters: clusters, current: "a=4 c=3 e=1"},
		{name: "reversed", clusters: reversed, current: "e=1 c=3 a=4"},
		{name: "rotated", clusters: append(slices.Clone(clusters[3:]), clusters[:3]...), current: "c=3 e=1 a=4"}}
	const excluded = "; excluded: 1 being deleted, 1 untolerated taint flotilla.io/not-ready"
	var tests []scheduleCase
	for _, tt := range []scheduleCase{
		{name: "duplicate", want: "a b c d", msg: "4/6 clusters" + excluded},
		{name: "divide with a remainder", placement: policy(divide()), replicas: n(11), want: "a=4 b=2 c=3 d=2", msg: "4/6 clusters" + excluded},
		{name: "weighted", placement: policy(divide(weight("a", 3), weight("b", 2), weight("c", 5), weight("d", 1))), replicas: n(17),
			want: "a=7 b=5 c=3 d=2", msg: "4/6 clusters" + excluded},
		{name: "maxClusters keeps the clusters the object is on", placement: policy(maxClusters(2)), want: "a c", msg: "2/6 clusters" + excluded},
	} {
		for _, o := range orders {
			c := tt // a copy per order
			c.name, c.clusters, c.current, c.excluded = tt.name+" "+o.name, o.clusters, o.current, "e f"
			tests = append(tests, c)
		}
	}
	runCases(t, tests)
	if got := clusters[0].Name + clusters[5].Name; got != "af" {
		t.Errorf("Schedule reordered the caller's clusters: first/last %q", got)
	}
}
