package override

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sjson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

const deploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web, tier: front}
  annotations: {note: keep}
spec:
  replicas: 3
  template:
    metadata:
      labels: {app: web}
    spec:
      initContainers:
      - name: init
        image: busybox:1.36
        command: [sh, -c, "true"]
      containers:
      - name: web
        image: nginx:1.25
        args: [--port=80]
        env:
        - {name: A, value: "1"}
        - {name: B, valueFrom: {secretKeyRef: {name: s, key: b}}}
        - {name: C, value: "3"}
      - name: sidecar
        image: r.io/side@` + testDigest + `
      ephemeralContainers:
      - name: debug
        image: busybox
`

const cronJobYAML = `
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: shop}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - {name: job, image: "tools/backup:1"}
`

const configMapYAML = `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: shop}
data: {key: value}
`

// Paths into deploymentYAML.
const (
	pod     = "/spec/template/spec"
	web     = pod + "/containers/0"
	sidecar = pod + "/containers/1"
	initC   = pod + "/initContainers/0"
)

// mustObject decodes a YAML object the way the API machinery does
// (integers as int64).
func mustObject(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		t.Fatalf("YAMLToJSON: %v", err)
	}
	var m map[string]any
	if err := k8sjson.Unmarshal(j, &m); err != nil {
		t.Fatalf("decode object: %v", err)
	}
	return &unstructured.Unstructured{Object: m}
}

// lookup returns the JSON encoding of the value at a JSON pointer (without
// escapes) in obj, or "<absent>".
func lookup(t *testing.T, obj map[string]any, pointer string) string {
	t.Helper()
	var v any = obj
	for _, tok := range strings.Split(pointer, "/")[1:] {
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return "<absent>"
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return "<absent>"
			}
			v = c[i]
		default:
			return "<absent>"
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %s: %v", pointer, err)
	}
	return string(b)
}

// value returns a JSON patch value.
func value(s string) *apiextensionsv1.JSON {
	return &apiextensionsv1.JSON{Raw: []byte(s)}
}

// op returns a JSON patch operation.
func op(o, path, v string) v1alpha1.JSONPatchOperation {
	p := v1alpha1.JSONPatchOperation{Op: o, Path: path}
	if v != "" {
		p.Value = value(v)
	}
	return p
}

// eu returns a source of the policy OverridePolicy/web/eu.
func eu(rule int, ov v1alpha1.Overriders) Source {
	return Source{Policy: "OverridePolicy/web/eu", Rule: rule, Overriders: ov, Namespaced: true}
}

// admin is rule of a ClusterOverridePolicy.
func admin(rule int, ov v1alpha1.Overriders) Source {
	return Source{Policy: "ClusterOverridePolicy/prod", Rule: rule, Overriders: ov}
}

const roleBindingYAML = `
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rb, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {kind: User, apiGroup: rbac.authorization.k8s.io, name: alice}
`

const roleYAML = `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: shop}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get]}
`
