package workload

import (
	"cmp"
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// serviceStatus unites the members' load-balancer ingress points,
// without duplicates, sorted by IP then hostname. The Service's other
// status fields are cluster-local and left out.
func serviceStatus(template *unstructured.Unstructured, members []Member, _ metav1.Time) (prev, next any) {
	prev, _ = templateStatus[corev1.ServiceStatus](template)
	seen := map[string]bool{}
	var ingress []corev1.LoadBalancerIngress
	for _, m := range decodeMembers[corev1.ServiceStatus](members) {
		for _, ing := range m.status.LoadBalancer.Ingress {
			key := ingressKey(ing)
			if !seen[key] {
				seen[key] = true
				ingress = append(ingress, ing)
			}
		}
	}
	slices.SortFunc(ingress, func(a, b corev1.LoadBalancerIngress) int {
		return cmp.Or(cmp.Compare(a.IP, b.IP), cmp.Compare(a.Hostname, b.Hostname),
			cmp.Compare(ingressKey(a), ingressKey(b)))
	})
	return prev, &corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}}
}

// ingressKey identifies an ingress point by all its fields.
func ingressKey(ing corev1.LoadBalancerIngress) string {
	// A struct of strings, integers and pointers to them always marshals.
	key, _ := json.Marshal(ing)
	return string(key)
}
