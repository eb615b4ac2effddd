package federate_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// TestImageOverriderNeedsAPart: an image overrider whose parts are all
// empty strings (as `registry: ""` in YAML; tag and digest have patterns) would change nothing; the host
// refuses it at admission.
func TestImageOverriderNeedsAPart(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	policy := func(name string, image map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": "OverridePolicy",
			"metadata": map[string]any{"namespace": ns, "name": name},
			"spec": map[string]any{
				"resourceSelectors": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}},
				"rules":             []any{map[string]any{"overriders": map[string]any{"image": []any{image}}}},
			},
		}}
	}
	ctx := context.Background()
	err := admin.Create(ctx, policy("empty", map[string]any{"registry": "", "repository": ""}))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "set at least one of registry, repository, tag, digest") {
		t.Errorf("an image overrider with only empty parts: %v, want it refused", err)
	}
	if err := admin.Create(ctx, policy("tag", map[string]any{"registry": "", "tag": "1.28"})); err != nil {
		t.Errorf("an image overrider with a tag: %v", err)
	}
}
