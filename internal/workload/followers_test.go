package workload

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

// fromYAML decodes a manifest the way an object read from the apiserver
// is decoded (integers as int64).
func fromYAML(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatalf("converting manifest to JSON: %v", err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		t.Fatalf("decoding manifest: %v", err)
	}
	return obj
}

func TestFollowers(t *testing.T) {
	ref := func(kind, name string) v1alpha1.ObjectReference {
		return v1alpha1.ObjectReference{Kind: kind, Name: name}
	}
	tests := []struct {
		name     string
		manifest string
		want     []v1alpha1.ObjectReference
	}{
		{
			name: "deployment referencing every source, some twice",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  template:
    spec:
      serviceAccountName: web-sa
      imagePullSecrets: [{name: registry}, {name: registry}]
      volumes:
      - {name: a, configMap: {name: cm-volume}}
      - {name: b, secret: {secretName: secret-volume}}
      - {name: c, persistentVolumeClaim: {claimName: data}}
      - name: d
        projected:
          sources:
          - configMap: {name: cm-projected}
          - secret: {name: secret-projected}
          - serviceAccountToken: {path: token}
      - {name: e, csi: {driver: x.example.com, nodePublishSecretRef: {name: csi-creds}}}
      - {name: f, configMap: {name: cm-env}}
      - {name: g, emptyDir: {}}
      - name: h
        ephemeral:
          volumeClaimTemplate:
            spec: {accessModes: [ReadWriteOnce]}
      initContainers:
      - name: init
        envFrom:
        - configMapRef: {name: cm-init}
      containers:
      - name: app
        env:
        - name: A
          valueFrom: {configMapKeyRef: {name: cm-env, key: a}}
        - name: B
          valueFrom: {secretKeyRef: {name: secret-env, key: b}}
        - name: C
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        - {name: D, value: plain}
        envFrom:
        - secretRef: {name: secret-envfrom}
        - configMapRef: {name: cm-init}
      ephemeralContainers:
      - name: debug
        env:
        - name: E
          valueFrom: {secretKeyRef: {name: secret-debug, key: e}}
`,
			want: []v1alpha1.ObjectReference{
				ref("ConfigMap", "cm-env"),
				ref("ConfigMap", "cm-init"),
				ref("ConfigMap", "cm-projected"),
				ref("ConfigMap", "cm-volume"),
				ref("PersistentVolumeClaim", "data"),
				ref("Secret", "csi-creds"),
				ref("Secret", "registry"),
				ref("Secret", "secret-debug"),
				ref("Secret", "secret-env"),
				ref("Secret", "secret-envfrom"),
				ref("Secret", "secret-projected"),
				ref("Secret", "secret-volume"),
				ref("ServiceAccount", "web-sa"),
			},
		},
		{
			name: "cronjob pod spec under the job template; default service account skipped",
			manifest: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          serviceAccountName: default
          restartPolicy: OnFailure
          containers:
          - name: backup
            envFrom:
            - secretRef: {name: backup-creds}
          volumes:
          - {name: conf, configMap: {name: backup-conf}}
`,
			want: []v1alpha1.ObjectReference{
				ref("ConfigMap", "backup-conf"),
				ref("Secret", "backup-creds"),
			},
		},
		{
			name: "statefulset volumeClaimTemplates are not followers",
			manifest: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  template:
    spec:
      containers:
      - name: db
        volumeMounts: [{name: data, mountPath: /data}]
      volumes:
      - {name: conf, configMap: {name: db-conf}}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce]}
`,
			want: []v1alpha1.ObjectReference{ref("ConfigMap", "db-conf")},
		},
		{
			name: "pod with the deprecated serviceAccount field",
			manifest: `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  serviceAccount: legacy
  containers: [{name: c}]
`,
			want: []v1alpha1.ObjectReference{ref("ServiceAccount", "legacy")},
		},
		{
			name: "deployment without references",
			manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: bare}
spec:
  template:
    spec:
      containers: [{name: c, image: nginx}]
`,
			want: nil,
		},
		{
			name: "configmap has no pod spec",
			manifest: `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {volumes: x}
`,
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Followers(fromYAML(t, tt.manifest))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Followers() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFollowersNil(t *testing.T) {
	if got := Followers(nil); got != nil {
		t.Errorf("Followers(nil) = %v, want nil", got)
	}
}
