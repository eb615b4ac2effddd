package status

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flotilla-io/flotilla/config/rbac"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// TestShippedRoleWritesEveryAggregatedStatus: for each built-in kind whose
// host status is aggregated (a Go function or a built-in interpreter), the
// shipped role lets the controller-manager patch its status subresource;
// nothing else grants it (the role patches no template).
func TestShippedRoleWritesEveryAggregatedStatus(t *testing.T) {
	objs, err := rbac.Objects(rbac.RoleFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules []rbacv1.PolicyRule
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		role := &rbacv1.ClusterRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
			t.Fatal(err)
		}
		rules = append(rules, role.Rules...)
	}
	may := func(group, resource string) bool {
		return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, "patch") && len(r.ResourceNames) == 0
		})
	}
	for _, k := range []struct{ apiVersion, kind, resource string }{
		{"apps/v1", "Deployment", "deployments"},
		{"apps/v1", "StatefulSet", "statefulsets"},
		{"apps/v1", "DaemonSet", "daemonsets"},
		{"apps/v1", "ReplicaSet", "replicasets"},
		{"batch/v1", "Job", "jobs"},
		{"batch/v1", "CronJob", "cronjobs"},
		{"v1", "Service", "services"},
		{"v1", "Pod", "pods"},
		{"v1", "ReplicationController", "replicationcontrollers"},
	} {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion(k.apiVersion)
		obj.SetKind(k.kind)
		if !workload.Aggregated(obj) {
			continue
		}
		group := obj.GroupVersionKind().Group
		if !may(group, k.resource+"/status") {
			t.Errorf("%s: its host status is aggregated, but the shipped role may not patch %s/status", k.kind, k.resource)
		}
	}
}
