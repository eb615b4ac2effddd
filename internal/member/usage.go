package member

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/internal/autoscale"
)

// ErrNoMetrics says a member has not reported a workload's resource
// usage (a pull member's agent, asked to, has not reported yet).
var ErrNoMetrics = errors.New("the member has not reported the workload's resource usage yet")

// podMetricsList is the part of a metrics.k8s.io/v1beta1 PodMetricsList
// usage needs.
type podMetricsList struct {
	Items []struct {
		Metadata   struct{ Name string } `json:"metadata"`
		Containers []struct {
			Usage map[corev1.ResourceName]resource.Quantity `json:"usage"`
		} `json:"containers"`
	} `json:"items"`
}

// PodUsage returns, per resource (cpu in millicores, memory in bytes),
// the usage of the workload's pods (its namespace and pod selector) from
// the member's metrics.k8s.io: two requests (the pods, their metrics),
// not one per pod. Pods being deleted are left out; pods that are not
// Ready are counted as unready, Ready ones without metrics as missing
// (autoscale.Usage).
func (s *Session) PodUsage(ctx context.Context, w Workload) (map[corev1.ResourceName]autoscale.Usage, error) {
	namespace, selector := w.Namespace, w.Selector
	if selector == nil {
		return nil, fmt.Errorf("%s %s has no pod selector", w.Kind, w.Name)
	}
	pods, err := s.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String(), ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	raw, err := s.client.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", namespace, "pods").
		Param("labelSelector", selector.String()).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read metrics.k8s.io: %w", err)
	}
	var list podMetricsList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("decode pod metrics: %w", err)
	}
	used := map[string]map[corev1.ResourceName]int64{}
	for _, m := range list.Items {
		sum := map[corev1.ResourceName]int64{}
		for _, c := range m.Containers {
			for name, q := range c.Usage {
				if name == corev1.ResourceCPU {
					sum[name] += q.MilliValue()
				} else {
					sum[name] += q.Value()
				}
			}
		}
		used[m.Metadata.Name] = sum
	}
	out := map[corev1.ResourceName]autoscale.Usage{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		var u autoscale.Usage
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			m, found := used[p.Name]
			switch {
			case !podReady(p):
				u.Unready++
			case !found:
				u.Missing++
			default:
				u.Ready++
				u.Used += m[name]
			}
		}
		out[name] = u
	}
	return out, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
