package autoscale

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/autoscale"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// usage sums the resource usage of the target's pods over the placed
// members (each reports its own: two requests per member, never one per
// pod) and turns the HPA's Resource metrics into autoscale.Metrics, with
// the status they show. problems name what was left out (a member that
// did not report, a metric type other than Resource); a metric left out
// is among the metrics as Invalid, so that it holds scale-downs back.
func (r *Reconciler) usage(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, tmpl *unstructured.Unstructured, fo *v1alpha1.FederatedObject) ([]autoscale.Metric, []autoscalingv2.MetricStatus, []string) {
	var problems []string
	if _, ok := workload.PodSelector(tmpl); !ok {
		return nil, nil, []string{"the target has no pod selector"}
	}
	total := map[corev1.ResourceName]autoscale.Usage{}
	reported := 0
	var unreported int32 // replicas placed on members that did not report
	for _, rep := range r.podUsage(ctx, tmpl, fo.Placement()) {
		if rep.err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", rep.cluster, rep.err))
			unreported += rep.replicas
			continue
		}
		reported++
		for name, v := range rep.usage {
			total[name] = total[name].Add(v)
		}
	}
	if reported == 0 {
		return nil, nil, problems
	}
	requests, unrequested := podRequests(tmpl)
	var metrics []autoscale.Metric
	var statuses []autoscalingv2.MetricStatus
	// A metric left out still votes: for the current replicas, so that
	// it allows no scale-down (Kubernetes' rule for a metric it cannot
	// compute: what it measures may be what is busy).
	leftOut := func(name, why string) {
		problems = append(problems, why)
		metrics = append(metrics, autoscale.Metric{Name: name, Invalid: why})
	}
	for _, m := range hpa.Spec.Metrics {
		if m.Type != autoscalingv2.ResourceMetricSourceType || m.Resource == nil {
			leftOut(string(m.Type), fmt.Sprintf("metric type %s is not supported by a federated HPA (Resource only)", m.Type))
			continue
		}
		name, target := m.Resource.Name, m.Resource.Target
		// The pods of members that did not report count as reporting
		// nothing: at the target when scaling down, idle when scaling up,
		// so that a silent member neither shrinks nor holds the workload.
		u := total[name]
		u.Missing += unreported
		var perPod, missingAt int64
		switch {
		case target.Type == autoscalingv2.UtilizationMetricType && target.AverageUtilization != nil:
			req := requests[name]
			if req == 0 || unrequested[name] {
				leftOut(string(name), fmt.Sprintf("%s: %v", name, errNoRequest))
				continue
			}
			perPod = req * int64(*target.AverageUtilization) / 100
			missingAt = req
		case target.Type == autoscalingv2.AverageValueMetricType && target.AverageValue != nil:
			perPod = amount(name, *target.AverageValue)
		default:
			leftOut(string(name), fmt.Sprintf("%s: target type %s is not supported (Utilization or AverageValue)", name, target.Type))
			continue
		}
		metrics = append(metrics, autoscale.Metric{Name: string(name), Usage: u, PerPod: perPod, MissingAt: missingAt})
		statuses = append(statuses, status(name, u, requests[name]))
	}
	return metrics, statuses, problems
}

// memberUsage is one member's report of the target's pods' usage.
type memberUsage struct {
	cluster  string
	replicas int32 // placed there
	usage    map[corev1.ResourceName]autoscale.Usage
	err      error
}

// podUsage asks the placed members for their pods' usage, all at once:
// one member that does not answer costs a pass memberCallTimeout, not
// that for each member in turn. A member whose probe finds it
// unreachable is not asked.
func (r *Reconciler) podUsage(ctx context.Context, tmpl *unstructured.Unstructured, placement []v1alpha1.ClusterPlacement) []memberUsage {
	out := make([]memberUsage, len(placement))
	var wg sync.WaitGroup
	for i, p := range placement {
		out[i] = memberUsage{cluster: p.Cluster, replicas: ptr.Deref(p.Replicas, 0)}
		sess, err := r.reachable(p.Cluster)
		if err != nil {
			out[i].err = err
			continue
		}
		w, err := workloadOf(sess, tmpl)
		if err != nil {
			out[i].err = err
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
			defer cancel()
			out[i].usage, out[i].err = sess.PodUsage(ctx, w)
		})
	}
	wg.Wait()
	return out
}

// errNotConnected: the member has no usable session.
var errNotConnected = errors.New("not connected")

// reachable returns the member's session, or why it is not asked: not
// connected, or unreachable by its last probes (a call would only wait
// for memberCallTimeout).
func (r *Reconciler) reachable(cluster string) (member.Member, error) {
	sess := r.Pool.Get(cluster)
	if sess == nil {
		return nil, errNotConnected
	}
	if snap := sess.Snapshot(); snap.HealthKnown && snap.Health.Health == member.Unreachable {
		return nil, fmt.Errorf("unreachable (%s)", snap.Health.Reason)
	}
	return sess, nil
}

// workloadOf names the target for a member.
func workloadOf(sess member.Member, tmpl *unstructured.Unstructured) (member.Workload, error) {
	gvr, _, err := sess.Resource(tmpl.GroupVersionKind())
	if err != nil {
		return member.Workload{}, err
	}
	w := member.Workload{GVR: gvr, Kind: tmpl.GetKind(), Namespace: tmpl.GetNamespace(), Name: tmpl.GetName()}
	if sel, ok := workload.PodSelector(tmpl); ok {
		w.Selector = sel
	}
	return w, nil
}

// status is a Resource metric's current value: the average usage of the
// ready pods, and its utilization of the request.
func status(name corev1.ResourceName, u autoscale.Usage, request int64) autoscalingv2.MetricStatus {
	var avg int64
	if u.Ready > 0 {
		avg = u.Used / int64(u.Ready)
	}
	cur := autoscalingv2.MetricValueStatus{AverageValue: quantity(name, avg)}
	if request > 0 {
		util := int32(avg * 100 / request)
		cur.AverageUtilization = &util
	}
	return autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: name, Current: cur}}
}

// podRequests sums the template's container requests per resource
// (millicores of cpu, bytes of the others), and names the resources some
// container (a sidecar among them) does not request: a utilization is
// then meaningless, as in Kubernetes.
func podRequests(tmpl *unstructured.Unstructured) (map[corev1.ResourceName]int64, map[corev1.ResourceName]bool) {
	out, missing := map[corev1.ResourceName]int64{}, map[corev1.ResourceName]bool{}
	raw, found, _ := unstructured.NestedMap(tmpl.Object, workload.PodSpecPath(tmpl)...)
	if !found {
		return out, missing
	}
	spec := &corev1.PodSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, spec); err != nil {
		return out, missing
	}
	containers := slices.Clone(spec.Containers)
	for _, c := range spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			containers = append(containers, c) // a sidecar runs beside the others
		}
	}
	for _, c := range containers {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			q, ok := c.Resources.Requests[name]
			if !ok {
				missing[name] = true
				continue
			}
			out[name] += amount(name, q)
		}
	}
	return out, missing
}

// findCondition returns the status's condition of type typ, or nil.
func findCondition(st autoscalingv2.HorizontalPodAutoscalerStatus, typ autoscalingv2.HorizontalPodAutoscalerConditionType) *autoscalingv2.HorizontalPodAutoscalerCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}

func amount(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func quantity(name corev1.ResourceName, v int64) *resource.Quantity {
	if name == corev1.ResourceCPU {
		return resource.NewMilliQuantity(v, resource.DecimalSI)
	}
	return resource.NewQuantity(v, resource.BinarySI)
}

// setCondition sets an HPA condition, keeping its transition time while
// its status stays.
func setCondition(st *autoscalingv2.HorizontalPodAutoscalerStatus, typ autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, msg string, now time.Time) {
	c := autoscalingv2.HorizontalPodAutoscalerCondition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(now)}
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			if st.Conditions[i].Status == status {
				c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// statusEqual compares statuses ignoring nothing: a write happens only
// when something the HPA shows changed.
func statusEqual(a, b autoscalingv2.HorizontalPodAutoscalerStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// limitReason is the ScalingLimited reason of a decision's limit (down:
// the decision scales down), Kubernetes' names.
func limitReason(limited string, down bool) string {
	switch {
	case limited == "min":
		return "TooFewReplicas"
	case limited == "max":
		return "TooManyReplicas"
	case limited == "disabled":
		return "ScalingDisabled"
	case down:
		return "ScaleDownLimit"
	}
	return "ScaleUpLimit"
}

func joinProblems(p []string) string {
	return strings.Join(slices.Compact(p), "; ")
}
