package render

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSanitizeMetadataAndStatus(t *testing.T) {
	obj := newDeployment(int64(6), nil)
	Sanitize(obj)
	meta, _, _ := unstructured.NestedMap(obj.Object, "metadata")
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "selfLink", "ownerReferences", "finalizers", "managedFields"} {
		if v, ok := meta[f]; ok {
			t.Errorf("metadata.%s = %v, want it removed", f, v)
		}
	}
	want := map[string]any{
		"name": "web", "namespace": "shop",
		"labels":      map[string]any{"app": "web"},
		"annotations": map[string]any{"note": "keep"},
	}
	if !reflect.DeepEqual(meta, want) {
		t.Errorf("metadata = %v, want %v", meta, want)
	}
	if _, ok := obj.Object["status"]; ok {
		t.Errorf("status kept: %v", obj.Object["status"])
	}
	if n, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); n != 6 {
		t.Errorf("spec.replicas = %d, want 6 (Sanitize does not place)", n)
	}
}

func TestSanitizeDeletionFields(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cfg", "namespace": "shop",
			"deletionTimestamp": "2025-01-02T00:00:00Z", "deletionGracePeriodSeconds": int64(0)},
		"data": map[string]any{"k": "v"},
	}}
	Sanitize(obj)
	want := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cfg", "namespace": "shop"},
		"data":     map[string]any{"k": "v"},
	}
	if !reflect.DeepEqual(obj.Object, want) {
		t.Errorf("Sanitize = %v, want %v", obj.Object, want)
	}
}

func service(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec":     spec,
	}}
}

func TestSanitizeService(t *testing.T) {
	ports := func(nodePort bool) []any {
		p := map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080), "protocol": "TCP"}
		if nodePort {
			p["nodePort"] = int64(30080)
		}
		return []any{p, map[string]any{"name": "metrics", "port": int64(9090)}}
	}
	tests := []struct {
		name string
		spec map[string]any
		want map[string]any
	}{
		{"cluster IP service",
			map[string]any{"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": []any{"10.96.0.10"},
				"ipFamilies": []any{"IPv4"}, "ipFamilyPolicy": "SingleStack", "selector": map[string]any{"app": "web"}, "ports": ports(false)},
			map[string]any{"type": "ClusterIP", "selector": map[string]any{"app": "web"}, "ports": ports(false)}},
		{"node ports removed",
			map[string]any{"type": "NodePort", "clusterIP": "10.96.0.11", "clusterIPs": []any{"10.96.0.11"}, "ports": ports(true)},
			map[string]any{"type": "NodePort", "ports": ports(false)}},
		{"headless keeps None",
			map[string]any{"clusterIP": "None", "clusterIPs": []any{"None"}, "ipFamilies": []any{"IPv4"}, "ipFamilyPolicy": "SingleStack", "ports": ports(false)},
			map[string]any{"clusterIP": "None", "clusterIPs": []any{"None"}, "ports": ports(false)}},
		{"dual stack",
			map[string]any{"clusterIP": "10.96.0.12", "clusterIPs": []any{"10.96.0.12", "fd00::12"}, "ipFamilies": []any{"IPv4", "IPv6"}, "ipFamilyPolicy": "PreferDualStack"},
			map[string]any{}},
		{"external name without ports",
			map[string]any{"type": "ExternalName", "externalName": "db.example.com"},
			map[string]any{"type": "ExternalName", "externalName": "db.example.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := service(tt.spec)
			Sanitize(obj)
			got, _, _ := unstructured.NestedMap(obj.Object, "spec")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("spec = %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestSanitizeServiceOfAnotherGroup(t *testing.T) {
	obj := service(map[string]any{"clusterIP": "10.0.0.1", "ports": []any{map[string]any{"port": int64(80), "nodePort": int64(30000)}}})
	obj.SetAPIVersion("example.com/v1")
	Sanitize(obj)
	if ip, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterIP"); ip != "10.0.0.1" {
		t.Errorf("clusterIP = %q, want it kept on a non-core Service kind", ip)
	}
}

func job(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "once", "namespace": "shop"},
		"spec":     spec,
	}}
}

func TestSanitizeJob(t *testing.T) {
	const uid = "0b5f0c0e-0000-4000-8000-000000000002"
	generated := func() map[string]any {
		return map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": uid}}
	}
	podLabels := func() map[string]any {
		return map[string]any{
			"controller-uid": uid, "batch.kubernetes.io/controller-uid": uid,
			"job-name": "once", "batch.kubernetes.io/job-name": "once", "app": "batch",
		}
	}
	template := func(labels map[string]any) map[string]any {
		t := map[string]any{"spec": map[string]any{"restartPolicy": "Never", "containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}
		if labels != nil {
			t["metadata"] = map[string]any{"labels": labels}
		}
		return t
	}
	tests := []struct {
		name string
		spec map[string]any
		want map[string]any
	}{
		{"generated selector and uid labels removed",
			map[string]any{"backoffLimit": int64(2), "selector": generated(), "template": template(podLabels())},
			map[string]any{"backoffLimit": int64(2), "template": template(map[string]any{
				"job-name": "once", "batch.kubernetes.io/job-name": "once", "app": "batch"})}},
		{"manualSelector false behaves like unset",
			map[string]any{"manualSelector": false, "selector": generated(), "template": template(podLabels())},
			map[string]any{"manualSelector": false, "template": template(map[string]any{
				"job-name": "once", "batch.kubernetes.io/job-name": "once", "app": "batch"})}},
		{"manual selector kept with its labels",
			map[string]any{"manualSelector": true, "selector": generated(), "template": template(podLabels())},
			map[string]any{"manualSelector": true, "selector": generated(), "template": template(podLabels())}},
		{"template without labels",
			map[string]any{"selector": generated(), "template": template(nil)},
			map[string]any{"template": template(nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := job(tt.spec)
			Sanitize(obj)
			got, _, _ := unstructured.NestedMap(obj.Object, "spec")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("spec = %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestRenderLeavesTemplateAlone(t *testing.T) {
	templates := map[string]*unstructured.Unstructured{
		"deployment": newDeployment(int64(6), nil),
		"service": service(map[string]any{"clusterIP": "10.96.0.10", "clusterIPs": []any{"10.96.0.10"},
			"ports": []any{map[string]any{"port": int64(80), "nodePort": int64(30080)}}}),
		"job": job(map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"controller-uid": "x"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"controller-uid": "x", "app": "a"}}}}),
	}
	for name, tmpl := range templates {
		t.Run(name, func(t *testing.T) {
			before := tmpl.DeepCopy()
			got, err := Render(Input{Template: tmpl})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if !reflect.DeepEqual(tmpl.Object, before.Object) {
				t.Errorf("Render modified the template:\n got %v\nwant %v", tmpl.Object, before.Object)
			}
			if reflect.DeepEqual(got.Object, before.Object) {
				t.Errorf("Render returned the template unchanged; want host fields removed")
			}
		})
	}
}

// TestSanitizeControllerAnnotations: the annotations a member's workload
// controllers keep are not copied (a template exported from a cluster
// carries its revision), the others are.
func TestSanitizeControllerAnnotations(t *testing.T) {
	for _, tt := range []struct {
		apiVersion, kind string
		in, want         map[string]any
	}{
		{"apps/v1", "Deployment", map[string]any{"deployment.kubernetes.io/revision": "7", "note": "keep"}, map[string]any{"note": "keep"}},
		{"apps/v1", "Deployment", map[string]any{"deployment.kubernetes.io/revision": "7"}, nil},
		{"apps/v1", "DaemonSet", map[string]any{"deprecated.daemonset.template.generation": "3", "note": "keep"}, map[string]any{"note": "keep"}},
		{"v1", "ConfigMap", map[string]any{"deployment.kubernetes.io/revision": "7"}, map[string]any{"deployment.kubernetes.io/revision": "7"}},
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": tt.apiVersion, "kind": tt.kind,
			"metadata": map[string]any{"name": "x", "namespace": "shop", "annotations": tt.in}}}
		Sanitize(obj)
		got, _, _ := unstructured.NestedMap(obj.Object, "metadata", "annotations")
		if len(got) == 0 && tt.want == nil {
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s annotations %v, want %v", tt.kind, got, tt.want)
		}
	}
}
