package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/pull"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestIntentsThatDisagreeWithTheirObjectFail: an intent (edited by hand,
// or written by a hub of another version) whose object is of another
// resource than the intent names, or has another name than the intent's,
// is Failed with the reason, and nothing is written to the member: the
// agent would otherwise judge one object's copy by another's (a
// ConfigMap taken over because a Deployment of that name is Flotilla's).
func TestIntentsThatDisagreeWithTheirObjectFail(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	configMap := func(name string) runtime.RawExtension {
		return runtime.RawExtension{Raw: fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q,"labels":{%q:"true"}},"data":{"k":"v"}}`, name, ns, v1alpha1.LabelManaged)}
	}
	deployments := schema.GroupResource{Group: "apps", Resource: "deployments"}
	configMaps := schema.GroupResource{Resource: "configmaps"}
	tests := []struct {
		name     string
		intent   string
		resource v1alpha1.IntentResource
		object   runtime.RawExtension
		want     string
	}{
		{"a ConfigMap in a Deployment's intent", pull.IntentName(deployments, ns, "x"),
			v1alpha1.IntentResource{Group: "apps", Version: "v1", Resource: "deployments"}, configMap("x"),
			"is of resource configmaps, not of the intent's resource deployments.apps"},
		{"another object's name", pull.IntentName(configMaps, ns, "a"),
			v1alpha1.IntentResource{Version: "v1", Resource: "configmaps"}, configMap("b"),
			"is not this intent's"},
	}
	for _, tt := range tests {
		ci := &v1alpha1.ClusterIntent{
			ObjectMeta: metav1.ObjectMeta{Namespace: v1alpha1.ClusterNamespace(pullName), Name: tt.intent},
			Spec:       v1alpha1.ClusterIntentSpec{Resource: tt.resource, Object: tt.object, Hash: "h"},
		}
		if err := admin.Create(ctx, ci); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), ci) })
		testenv.Eventually(t, waitTimeout, tt.name+": the intent Failed", func(ctx context.Context) error {
			got := &v1alpha1.ClusterIntent{}
			if err := admin.Get(ctx, types.NamespacedName{Namespace: ci.Namespace, Name: ci.Name}, got); err != nil {
				return err
			}
			if got.Status.Outcome != v1alpha1.IntentFailed || !strings.Contains(got.Status.Message, tt.want) {
				return fmt.Errorf("status %s %q, want Failed saying %q", got.Status.Outcome, got.Status.Message, tt.want)
			}
			return nil
		})
	}
	cms, err := env.Cluster("member-1").Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelManaged})
	if err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 0 {
		t.Errorf("the agent wrote %d ConfigMaps for intents that disagree with their objects", len(cms.Items))
	}
}
