package override

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestApply(t *testing.T) {
	tests := []struct {
		name    string
		obj     string
		sources []Source
		// want maps JSON pointers to the JSON they must hold afterwards.
		want    map[string]string
		wantErr string
	}{
		{
			name:    "image registry on all containers and init containers, not ephemeral",
			sources: []Source{eu(0, v1alpha1.Overriders{Image: []v1alpha1.ImageOverrider{{Registry: "r.example.com"}}})},
			want: map[string]string{
				web + "/image":                       `"r.example.com/nginx:1.25"`,
				sidecar + "/image":                   `"r.example.com/side@` + testDigest + `"`,
				initC + "/image":                     `"r.example.com/busybox:1.36"`,
				pod + "/ephemeralContainers/0/image": `"busybox"`,
			},
		},
		{
			name: "image ContainerNames selects containers",
			sources: []Source{eu(0, v1alpha1.Overriders{Image: []v1alpha1.ImageOverrider{
				{ContainerNames: []string{"sidecar", "init"}, Tag: "v2"},
				{ContainerNames: []string{"absent"}, Tag: "v3"},
			}})},
			want: map[string]string{
				web + "/image":     `"nginx:1.25"`,
				sidecar + "/image": `"r.io/side:v2"`,
				initC + "/image":   `"busybox:v2"`,
			},
		},
		{
			name:    "image digest drops tag",
			sources: []Source{eu(0, v1alpha1.Overriders{Image: []v1alpha1.ImageOverrider{{ContainerNames: []string{"web"}, Repository: "mirror/nginx", Digest: testDigest2}}})},
			want:    map[string]string{web + "/image": `"mirror/nginx@` + testDigest2 + `"`},
		},
		{
			name:    "unparsable image",
			obj:     strings.Replace(deploymentYAML, "image: nginx:1.25", "image: NGINX", 1),
			sources: []Source{eu(2, v1alpha1.Overriders{Image: []v1alpha1.ImageOverrider{{Tag: "v2"}}})},
			wantErr: `OverridePolicy/web/eu rule 2 image[0]: container containers[0] "web": image "NGINX": invalid repository path "NGINX"`,
		},
		{
			name: "command and args replace and append, init container too",
			sources: []Source{eu(0, v1alpha1.Overriders{
				Command: []v1alpha1.CommandOverrider{
					{ContainerName: "web", Values: []string{"nginx", "-g"}},
					{ContainerName: "init", Operator: v1alpha1.ListAppend, Values: []string{"extra"}},
				},
				Args: []v1alpha1.CommandOverrider{
					{ContainerName: "web", Operator: v1alpha1.ListAppend, Values: []string{"--debug"}},
					{ContainerName: "sidecar", Operator: v1alpha1.ListAppend, Values: []string{"-v"}},
					{ContainerName: "init", Operator: v1alpha1.ListReplace, Values: []string{"a", "b"}},
				},
			})},
			want: map[string]string{
				web + "/command":     `["nginx","-g"]`,
				web + "/args":        `["--port=80","--debug"]`,
				sidecar + "/command": `<absent>`,
				sidecar + "/args":    `["-v"]`,
				initC + "/command":   `["sh","-c","true","extra"]`,
				initC + "/args":      `["a","b"]`,
			},
		},
		{
			name:    "replace with no values removes the list",
			sources: []Source{eu(0, v1alpha1.Overriders{Args: []v1alpha1.CommandOverrider{{ContainerName: "web"}}})},
			want:    map[string]string{web + "/args": `<absent>`},
		},
		{
			name:    "command for a missing container",
			sources: []Source{eu(0, v1alpha1.Overriders{}), eu(1, v1alpha1.Overriders{Command: []v1alpha1.CommandOverrider{{ContainerName: "debug", Values: []string{"x"}}}})},
			wantErr: `OverridePolicy/web/eu rule 1 command[0]: container "debug" not found`,
		},
		{
			name: "env set keeps position and drops valueFrom, appends new, removes",
			sources: []Source{eu(0, v1alpha1.Overriders{Env: []v1alpha1.EnvOverrider{{
				ContainerNames: []string{"web"},
				Set:            []v1alpha1.EnvVar{{Name: "Z", Value: "26"}, {Name: "B", Value: "two"}, {Name: "Y", Value: "25"}},
				Remove:         []string{"A", "Y"},
			}}})},
			want: map[string]string{
				web + "/env":     `[{"name":"B","value":"two"},{"name":"C","value":"3"},{"name":"Z","value":"26"}]`,
				sidecar + "/env": `<absent>`,
				initC + "/env":   `<absent>`,
			},
		},
		{
			name:    "env on every container and init container",
			sources: []Source{eu(0, v1alpha1.Overriders{Env: []v1alpha1.EnvOverrider{{Set: []v1alpha1.EnvVar{{Name: "REGION", Value: "eu"}}, Remove: []string{"C"}}}})},
			want: map[string]string{
				web + "/env":                       `[{"name":"A","value":"1"},{"name":"B","valueFrom":{"secretKeyRef":{"key":"b","name":"s"}}},{"name":"REGION","value":"eu"}]`,
				sidecar + "/env":                   `[{"name":"REGION","value":"eu"}]`,
				initC + "/env":                     `[{"name":"REGION","value":"eu"}]`,
				pod + "/ephemeralContainers/0/env": `<absent>`,
			},
		},
		{
			name: "labels and annotations on the object, set then remove",
			sources: []Source{eu(0, v1alpha1.Overriders{
				Labels:      &v1alpha1.MapOverrider{Set: map[string]string{"region": "eu", "tier": "edge", "gone": "x"}, Remove: []string{"gone", "app"}},
				Annotations: &v1alpha1.MapOverrider{Remove: []string{"note"}},
			})},
			want: map[string]string{
				"/metadata/labels":               `{"region":"eu","tier":"edge"}`,
				"/metadata/annotations":          `<absent>`,
				"/spec/template/metadata/labels": `{"app":"web"}`,
			},
		},
		{
			name: "json patch add, replace, remove",
			sources: []Source{eu(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{
				op("replace", "/spec/replicas", `5`),
				op("add", pod+"/priorityClassName", `"high"`),
				op("add", pod+"/containers/0/env/1", `{"name":"X","value":"x"}`),
				op("add", pod+"/tolerations", `[]`),
				op("add", pod+"/tolerations/-", `{"key":"k","operator":"Exists"}`),
				op("remove", pod+"/containers/1", ""),
				op("add", "/metadata/annotations/a~1b", `"slash"`),
			}})},
			want: map[string]string{
				"/spec/replicas":           `5`,
				pod + "/priorityClassName": `"high"`,
				web + "/env":               `[{"name":"A","value":"1"},{"name":"X","value":"x"},{"name":"B","valueFrom":{"secretKeyRef":{"key":"b","name":"s"}}},{"name":"C","value":"3"}]`,
				pod + "/tolerations":       `[{"key":"k","operator":"Exists"}]`,
				pod + "/containers/1":      `<absent>`,
				"/metadata/annotations":    `{"a/b":"slash","note":"keep"}`,
			},
		},
		{
			name:    "json patch replace of a missing member",
			sources: []Source{eu(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("add", "/spec/paused", `true`), op("replace", "/spec/foo", `1`)}})},
			wantErr: `OverridePolicy/web/eu rule 0 jsonPatch[1]: replace /spec/foo: path not found`,
		},
		{
			name:    "json patch remove of a missing member",
			sources: []Source{eu(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("remove", "/metadata/labels/nope", "")}})},
			wantErr: `jsonPatch[0]: remove /metadata/labels/nope: path not found`,
		},
		{
			name:    "json patch add under a missing parent",
			sources: []Source{eu(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("add", "/spec/strategy/type", `"Recreate"`)}})},
			wantErr: `jsonPatch[0]: add /spec/strategy/type: path not found`,
		},
		{
			name:    "json patch array index past the end",
			sources: []Source{eu(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", pod+"/containers/2/image", `"x"`)}})},
			wantErr: `jsonPatch[0]: replace ` + pod + `/containers/2/image: path not found`,
		},
		{
			name:    "json patch negative array index",
			sources: []Source{eu(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("remove", pod+"/containers/-1", "")}})},
			wantErr: `jsonPatch[0]: remove ` + pod + `/containers/-1: invalid array index "-1"`,
		},
		{
			name:    "json patch without value",
			sources: []Source{eu(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{{Op: "add", Path: "/spec/paused"}}})},
			wantErr: `jsonPatch[0]: add /spec/paused: value is required`,
		},
		{
			name:    "json patch move is not supported",
			sources: []Source{eu(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("move", "/spec/paused", "")}})},
			wantErr: `jsonPatch[0]: move /spec/paused: unsupported operation "move"`,
		},
		{
			name: "order within a source: image and labels before json patch",
			sources: []Source{eu(0, v1alpha1.Overriders{
				// Listed last but applied first: the patch below would
				// fail on the missing label otherwise, and the image
				// would end as custom:v2.
				JSONPatch: []v1alpha1.JSONPatchOperation{
					op("replace", web+"/image", `"custom"`),
					op("remove", "/metadata/labels/temp", ""),
				},
				Labels: &v1alpha1.MapOverrider{Set: map[string]string{"temp": "1"}},
				Image:  []v1alpha1.ImageOverrider{{ContainerNames: []string{"web"}, Tag: "v2"}},
			})},
			want: map[string]string{
				web + "/image":     `"custom"`,
				"/metadata/labels": `{"app":"web","tier":"front"}`,
			},
		},
		{
			name: "order within a source: command before env before json patch",
			sources: []Source{eu(0, v1alpha1.Overriders{
				JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", web+"/command/0", `"patched"`), op("remove", web+"/env/3", "")},
				Env:       []v1alpha1.EnvOverrider{{ContainerNames: []string{"web"}, Set: []v1alpha1.EnvVar{{Name: "D", Value: "4"}}}},
				Command:   []v1alpha1.CommandOverrider{{ContainerName: "web", Values: []string{"run"}}},
			})},
			want: map[string]string{
				web + "/command": `["patched"]`,
				web + "/env":     `[{"name":"A","value":"1"},{"name":"B","valueFrom":{"secretKeyRef":{"key":"b","name":"s"}}},{"name":"C","value":"3"}]`,
			},
		},
		{
			name: "sources apply in order, the later wins",
			sources: []Source{
				{Policy: "ClusterOverridePolicy/prod", Rule: 0, Overriders: v1alpha1.Overriders{
					Image:  []v1alpha1.ImageOverrider{{Tag: "1.26"}},
					Labels: &v1alpha1.MapOverrider{Set: map[string]string{"region": "global", "owner": "ops"}},
				}},
				eu(0, v1alpha1.Overriders{
					Image:  []v1alpha1.ImageOverrider{{ContainerNames: []string{"web"}, Tag: "1.27"}},
					Labels: &v1alpha1.MapOverrider{Set: map[string]string{"region": "eu"}},
				}),
				eu(1, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("remove", "/metadata/labels/owner", "")}}),
			},
			want: map[string]string{
				web + "/image":     `"nginx:1.27"`,
				initC + "/image":   `"busybox:1.26"`,
				"/metadata/labels": `{"app":"web","region":"eu","tier":"front"}`,
			},
		},
		{
			name: "CronJob pod spec under the job template",
			obj:  cronJobYAML,
			sources: []Source{eu(0, v1alpha1.Overriders{
				Image: []v1alpha1.ImageOverrider{{Registry: "localhost:5000"}},
				Args:  []v1alpha1.CommandOverrider{{ContainerName: "job", Operator: v1alpha1.ListAppend, Values: []string{"--full"}}},
				Env:   []v1alpha1.EnvOverrider{{Set: []v1alpha1.EnvVar{{Name: "TARGET", Value: "s3"}}}},
			})},
			want: map[string]string{
				"/spec/jobTemplate/spec/template/spec/containers/0": `{"args":["--full"],"env":[{"name":"TARGET","value":"s3"}],"image":"localhost:5000/tools/backup:1","name":"job"}`,
				"/spec/schedule": `"0 3 * * *"`,
			},
		},
		{
			name: "kind without a pod spec: container overriders do nothing",
			obj:  configMapYAML,
			sources: []Source{eu(0, v1alpha1.Overriders{
				Image:     []v1alpha1.ImageOverrider{{Registry: "r.io"}},
				Command:   []v1alpha1.CommandOverrider{{ContainerName: "web", Values: []string{"x"}}},
				Env:       []v1alpha1.EnvOverrider{{Set: []v1alpha1.EnvVar{{Name: "A", Value: "1"}}}},
				Labels:    &v1alpha1.MapOverrider{Set: map[string]string{"region": "eu"}},
				JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/data/key", `"eu-value"`)},
			})},
			want: map[string]string{
				"": `{"apiVersion":"v1","data":{"key":"eu-value"},"kind":"ConfigMap","metadata":{"labels":{"region":"eu"},"name":"cfg","namespace":"shop"}}`,
			},
		},
		{
			name:    "identity: json patch replacing the name is refused",
			sources: []Source{eu(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/metadata/name", `"other"`)}})},
			wantErr: `overrides change metadata.name from "web" to "other" (first changed by OverridePolicy/web/eu rule 0)`,
		},
		{
			name: "identity: replacing metadata wholesale is refused",
			sources: []Source{eu(0, v1alpha1.Overriders{}), eu(1, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{
				op("replace", "/metadata", `{"name":"web"}`),
			}})},
			wantErr: `overrides change metadata.namespace from "shop" to <unset> (first changed by OverridePolicy/web/eu rule 1)`,
		},
		{
			name:    "identity: kind change is refused",
			sources: []Source{eu(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/kind", `"StatefulSet"`)}})},
			wantErr: `overrides change kind from "Deployment" to "StatefulSet"`,
		},
		{
			name:    "RBAC: a namespace's policy cannot change a RoleBinding's roleRef",
			obj:     roleBindingYAML,
			sources: []Source{eu(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/roleRef/name", `"cluster-admin"`)}})},
			wantErr: `OverridePolicy/web/eu rule 0 changes what RoleBinding shop/rb grants: a namespace's OverridePolicy may change only the metadata of an RBAC object`,
		},
		{
			name: "RBAC: nor its subjects",
			obj:  roleBindingYAML,
			sources: []Source{eu(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{
				op("add", "/subjects/-", `{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"system:authenticated"}`)}})},
			wantErr: `changes what RoleBinding shop/rb grants`,
		},
		{
			name:    "RBAC: nor a Role's rules",
			obj:     roleYAML,
			sources: []Source{eu(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/rules/0/verbs", `["*"]`)}})},
			wantErr: `changes what Role shop/reader grants`,
		},
		{
			name:    "RBAC: a namespace's policy may change the metadata",
			obj:     roleBindingYAML,
			sources: []Source{eu(0, v1alpha1.Overriders{Labels: &v1alpha1.MapOverrider{Set: map[string]string{"region": "eu"}}, JSONPatch: []v1alpha1.JSONPatchOperation{op("add", "/metadata/annotations", `{"a":"b"}`)}})},
			want:    map[string]string{"/metadata/labels/region": `"eu"`, "/metadata/annotations/a": `"b"`, "/roleRef/name": `"view"`},
		},
		{
			name:    "RBAC: a ClusterOverridePolicy may change the grants",
			obj:     roleBindingYAML,
			sources: []Source{admin(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/subjects/0/name", `"bob"`)}})},
			want:    map[string]string{"/subjects/0/name": `"bob"`},
		},
		{
			name: "RBAC: a namespace's policy cannot undo in one rule what another changed",
			obj:  roleBindingYAML,
			sources: []Source{
				admin(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/subjects/0/name", `"bob"`)}}),
				eu(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/subjects/0/name", `"alice"`)}}),
			},
			wantErr: `OverridePolicy/web/eu rule 0 changes what RoleBinding shop/rb grants`,
		},
		{
			name: "identity: checked after all sources, a change undone is allowed",
			sources: []Source{
				eu(0, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/metadata/name", `"tmp"`)}}),
				eu(1, v1alpha1.Overriders{JSONPatch: []v1alpha1.JSONPatchOperation{op("replace", "/metadata/name", `"web"`)}}),
			},
			want: map[string]string{"/metadata/name": `"web"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.obj
			if src == "" {
				src = deploymentYAML
			}
			obj := mustObject(t, src)
			err := Apply(obj, tt.sources)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Apply error = %v, want one containing %q", err, tt.wantErr)
				}
				if diff := cmp.Diff(mustObject(t, src).Object, obj.Object); diff != "" {
					t.Fatalf("Apply changed the object despite the error (-before +after):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			for pointer, want := range tt.want {
				if got := lookup(t, obj.Object, pointer); got != want {
					t.Errorf("%s = %s, want %s", pointer, got, want)
				}
			}
		})
	}
}

func TestApplyLeavesSourcesAlone(t *testing.T) {
	sources := []Source{eu(0, v1alpha1.Overriders{
		Image:       []v1alpha1.ImageOverrider{{ContainerNames: []string{"web"}, Registry: "r.io", Tag: "t"}},
		Command:     []v1alpha1.CommandOverrider{{ContainerName: "web", Operator: v1alpha1.ListAppend, Values: []string{"a"}}},
		Args:        []v1alpha1.CommandOverrider{{ContainerName: "web", Values: []string{"b"}}},
		Env:         []v1alpha1.EnvOverrider{{Set: []v1alpha1.EnvVar{{Name: "A", Value: "x"}}, Remove: []string{"C"}}},
		Labels:      &v1alpha1.MapOverrider{Set: map[string]string{"k": "v"}, Remove: []string{"app"}},
		Annotations: &v1alpha1.MapOverrider{Set: map[string]string{"a": "b"}},
		JSONPatch:   []v1alpha1.JSONPatchOperation{op("add", pod+"/nodeSelector", `{"zone":"eu-1"}`)},
	})}
	before := []Source{{Policy: sources[0].Policy, Rule: sources[0].Rule, Overriders: *sources[0].Overriders.DeepCopy(), Namespaced: sources[0].Namespaced}}

	first := mustObject(t, deploymentYAML)
	if err := Apply(first, sources); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if diff := cmp.Diff(before, sources); diff != "" {
		t.Fatalf("Apply changed the sources (-before +after):\n%s", diff)
	}

	// The result shares nothing with the sources: changing it leaves them
	// alone, and applying again gives the same object.
	args, _, _ := unstructured.NestedFieldNoCopy(first.Object, "spec", "template", "spec", "containers")
	args.([]any)[0].(map[string]any)["args"].([]any)[0] = "changed"
	sel, _, _ := unstructured.NestedFieldNoCopy(first.Object, "spec", "template", "spec", "nodeSelector")
	sel.(map[string]any)["zone"] = "changed"
	if diff := cmp.Diff(before, sources); diff != "" {
		t.Fatalf("changing the result changed the sources (-before +after):\n%s", diff)
	}
	second := mustObject(t, deploymentYAML)
	if err := Apply(second, sources); err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	if got := lookup(t, second.Object, web+"/args"); got != `["b"]` {
		t.Fatalf("args after second Apply = %s, want [\"b\"]", got)
	}
	if got := lookup(t, second.Object, pod+"/nodeSelector"); got != `{"zone":"eu-1"}` {
		t.Fatalf("nodeSelector after second Apply = %s, want {\"zone\":\"eu-1\"}", got)
	}
	third := mustObject(t, deploymentYAML)
	if err := Apply(third, sources); err != nil {
		t.Fatalf("third Apply: %v", err)
	}
	if diff := cmp.Diff(second.Object, third.Object); diff != "" {
		t.Fatalf("Apply is not deterministic (-second +third):\n%s", diff)
	}
}

func TestApplyNoSources(t *testing.T) {
	obj := mustObject(t, deploymentYAML)
	if err := Apply(obj, nil); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if diff := cmp.Diff(mustObject(t, deploymentYAML).Object, obj.Object); diff != "" {
		t.Fatalf("Apply without sources changed the object (-want +got):\n%s", diff)
	}
}
