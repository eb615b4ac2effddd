package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/pull"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

func deploymentsIn(ns string) []v1alpha1.ResourceSelector {
	return []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns}}
}

// waitForCluster waits until the FederatedObject of Deployment ns/name
// reports one of reasons for the pull member.
func waitForCluster(t *testing.T, ns, name string, reasons ...v1alpha1.PropagationReason) v1alpha1.ClusterPropagationStatus {
	t.Helper()
	key := types.NamespacedName{Namespace: ns, Name: name + ".deployment.apps"}
	var got v1alpha1.ClusterPropagationStatus
	testenv.Eventually(t, waitTimeout, fmt.Sprintf("FederatedObject %s reports %v for %s", key, reasons, pullName), func(ctx context.Context) error {
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, key, fo); err != nil {
			return err
		}
		for _, c := range fo.Status.Clusters {
			for _, r := range reasons {
				if c.Cluster == pullName && c.Reason == r {
					got = c
					return nil
				}
			}
		}
		return fmt.Errorf("status.clusters %+v", fo.Status.Clusters)
	})
	return got
}

// memberDeployment reads a Deployment from the pull member.
func memberDeployment(ctx context.Context, ns, name string) (*appsv1.Deployment, error) {
	return env.Cluster("member-1").Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
}

// intentOf reads the ClusterIntent of Deployment ns/name.
func intentOf(ctx context.Context, ns, name string) (*v1alpha1.ClusterIntent, error) {
	ci := &v1alpha1.ClusterIntent{}
	key := types.NamespacedName{Namespace: v1alpha1.ClusterNamespace(pullName), Name: pull.IntentName(schema.GroupResource{Group: "apps", Resource: "deployments"}, ns, name)}
	return ci, admin.Get(ctx, key, ci)
}

// TestPullPropagation: a Deployment placed on a pull member reaches the
// member through its agent, its status comes back to the host object,
// drift in the member is reverted, a template change arrives, and deleting
// the host object deletes the copy and the intent. The agent's report of
// the member (version, served kinds) is in the MemberCluster's status.
func TestPullPropagation(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	createClusterPolicy(t, ns, v1alpha1.PropagationSpec{
		ResourceSelectors: deploymentsIn(ns),
		Placement:         v1alpha1.Placement{ClusterNames: []string{pullName}},
	})
	dep := testenv.MakeDeployment("web", ns).Replicas(2).Obj()
	if err := admin.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	waitForCluster(t, ns, "web", v1alpha1.PropagationOK)
	testenv.Eventually(t, waitTimeout, "the member's copy runs 2 ready replicas", func(ctx context.Context) error {
		return testenv.DeploymentReady(ctx, env.Cluster("member-1").Client, ns, "web")
	})
	copy, err := memberDeployment(ctx, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if copy.Labels[v1alpha1.LabelManaged] != "true" || *copy.Spec.Replicas != 2 {
		t.Fatalf("member copy: labels %v replicas %d, want managed and 2", copy.Labels, *copy.Spec.Replicas)
	}
	testenv.Eventually(t, waitTimeout, "the host Deployment's status shows the member's 2 ready replicas", func(ctx context.Context) error {
		host := &appsv1.Deployment{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(dep), host); err != nil {
			return err
		}
		if host.Status.ReadyReplicas != 2 {
			return fmt.Errorf("status %+v", host.Status)
		}
		return nil
	})
	ci, err := intentOf(ctx, ns, "web")
	if err != nil {
		t.Fatalf("the intent of web: %v", err)
	}
	if ci.Status.Outcome != v1alpha1.IntentApplied || ci.Status.ObservedGeneration != ci.Generation || ci.Status.Copy == nil {
		t.Errorf("intent status %+v (generation %d), want Applied at the current generation with a copy", ci.Status, ci.Generation)
	}
	mc := &v1alpha1.MemberCluster{}
	if err := admin.Get(ctx, types.NamespacedName{Name: pullName}, mc); err != nil {
		t.Fatal(err)
	}
	if mc.Status.KubernetesVersion == "" || len(mc.Status.APIResources) == 0 || mc.Status.NodeCount != 1 {
		t.Errorf("MemberCluster status: version %q, %d kinds, %d nodes; want the agent's report (1 node)", mc.Status.KubernetesVersion, len(mc.Status.APIResources), mc.Status.NodeCount)
	}

	// Drift in the member is reverted by the agent. The member's own
	// controllers write the copy too: retry on conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := memberDeployment(ctx, ns, "web")
		if err != nil {
			return err
		}
		d.Spec.Replicas = ptr.To(int32(5))
		_, err = env.Cluster("member-1").Client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "the agent reverts the member copy to 2 replicas", func(ctx context.Context) error {
		d, err := memberDeployment(ctx, ns, "web")
		if err != nil {
			return err
		}
		if *d.Spec.Replicas != 2 {
			return fmt.Errorf("replicas %d", *d.Spec.Replicas)
		}
		return nil
	})

	// A template change arrives (the status controller writes the host
	// object too: retry on conflict).
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			return err
		}
		dep.Spec.Template.Spec.Containers[0].Image = "example.com/web:2"
		return admin.Update(ctx, dep)
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "the member copy runs example.com/web:2", func(ctx context.Context) error {
		d, err := memberDeployment(ctx, ns, "web")
		if err != nil {
			return err
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "example.com/web:2" {
			return fmt.Errorf("image %s", img)
		}
		return nil
	})

	// Deleting the host object deletes the copy and the intent.
	if err := admin.Delete(ctx, dep); err != nil {
		t.Fatal(err)
	}
	waitCopyAndIntentGone(t, ns, "web")
}

// waitCopyAndIntentGone waits until the member's copy of Deployment
// ns/name and its intent are deleted.
func waitCopyAndIntentGone(t *testing.T, ns, name string) {
	t.Helper()
	testenv.Eventually(t, waitTimeout, "the member copy and the intent of "+ns+"/"+name+" deleted", func(ctx context.Context) error {
		_, copyErr := memberDeployment(ctx, ns, name)
		ci, intentErr := intentOf(ctx, ns, name)
		if apierrors.IsNotFound(copyErr) && apierrors.IsNotFound(intentErr) {
			return nil
		}
		return fmt.Errorf("member copy: %v; %s", copyErr, deletionChain(ctx, ns, name, ci, intentErr))
	})
}

// deletionChain describes where the deletion of Deployment ns/name stands
// on the hub: the host object, its FederatedObject and its intent (ci, as
// read with err), so that a timeout says which step did not happen.
func deletionChain(ctx context.Context, ns, name string, ci *v1alpha1.ClusterIntent, err error) string {
	var b strings.Builder
	host := &appsv1.Deployment{}
	if herr := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, host); herr != nil {
		fmt.Fprintf(&b, "host object: %v", herr)
	} else {
		fmt.Fprintf(&b, "host object: deletionTimestamp %v, finalizers %v", host.DeletionTimestamp, host.Finalizers)
	}
	fo := &v1alpha1.FederatedObject{}
	if ferr := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + ".deployment.apps"}, fo); ferr != nil {
		fmt.Fprintf(&b, "; FederatedObject: %v", ferr)
	} else {
		fmt.Fprintf(&b, "; FederatedObject: deletionTimestamp %v, finalizers %v, release %q, clusters %+v",
			fo.DeletionTimestamp, fo.Finalizers, fo.Annotations[v1alpha1.AnnotationRelease], fo.Status.Clusters)
	}
	if err != nil {
		fmt.Fprintf(&b, "; intent: %v", err)
	} else {
		fmt.Fprintf(&b, "; intent: deletionTimestamp %v, finalizers %v, generation %d, status %+v",
			ci.DeletionTimestamp, ci.Finalizers, ci.Generation, ci.Status)
	}
	return b.String()
}

// TestPullConflict: a member object Flotilla does not manage is not
// touched, and the FederatedObject reports the Conflict the agent found.
func TestPullConflict(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	own := testenv.MakeDeployment("legacy", ns).Obj()
	own.Spec.Template.Spec.Containers[0].Image = "example.com/member-owned:1"
	if _, err := env.Cluster("member-1").Client.AppsV1().Deployments(ns).Create(ctx, own, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createClusterPolicy(t, ns, v1alpha1.PropagationSpec{
		ResourceSelectors: deploymentsIn(ns),
		Placement:         v1alpha1.Placement{ClusterNames: []string{pullName}},
	})
	dep := testenv.MakeDeployment("legacy", ns).Obj()
	dep.Spec.Template.Spec.Containers[0].Image = "example.com/host:2"
	if err := admin.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	st := waitForCluster(t, ns, "legacy", v1alpha1.PropagationConflict, v1alpha1.PropagationOK)
	if st.Reason != v1alpha1.PropagationConflict || !strings.Contains(st.Message, "not managed by Flotilla") {
		t.Fatalf("cluster %s: %s %q, want a Conflict", pullName, st.Reason, st.Message)
	}
	live, err := memberDeployment(ctx, ns, "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if img := live.Spec.Template.Spec.Containers[0].Image; img != "example.com/member-owned:1" || live.Labels[v1alpha1.LabelManaged] != "" {
		t.Errorf("the member's own Deployment was changed: image %s, labels %v", img, live.Labels)
	}
}

// flotillaWrite returns when Flotilla's field manager last applied to an
// object, and its generation.
func flotillaWrite(d *appsv1.Deployment) (time.Time, int64) {
	for _, f := range d.ManagedFields {
		if f.Manager == "flotilla" && f.Operation == metav1.ManagedFieldsOperationApply && f.Time != nil {
			return f.Time.Time, d.Generation
		}
	}
	return time.Time{}, d.Generation
}

// TestPullAgentSilentAndRestart: a stopped agent turns its cluster not
// Ready (Unknown, AgentSilent) while the member keeps its workloads; an
// object deleted meanwhile loses its copy once the agent is back; a
// restarted agent makes it Ready again and rewrites nothing else in the
// member.
func TestPullAgentSilentAndRestart(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	createClusterPolicy(t, ns, v1alpha1.PropagationSpec{
		ResourceSelectors: deploymentsIn(ns),
		Placement:         v1alpha1.Placement{ClusterNames: []string{pullName}},
	})
	for _, name := range []string{"steady-a", "steady-b"} {
		if err := admin.Create(ctx, testenv.MakeDeployment(name, ns).Obj()); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string]time.Time{}
	gens := map[string]int64{}
	for _, name := range []string{"steady-a", "steady-b"} {
		waitForCluster(t, ns, name, v1alpha1.PropagationOK)
		d, err := memberDeployment(ctx, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		before[name], gens[name] = flotillaWrite(d)
		if before[name].IsZero() {
			t.Fatalf("member %s has no apply of Flotilla's: %v", name, d.ManagedFields)
		}
	}

	stopAgent()
	cond := waitReady(t, metav1.ConditionUnknown)
	if cond.Reason != pull.ReasonAgentSilent || !strings.Contains(cond.Message, "no heartbeat") {
		t.Errorf("Ready=Unknown %s %q, want %s", cond.Reason, cond.Message, pull.ReasonAgentSilent)
	}
	for name := range before {
		if _, err := memberDeployment(ctx, ns, name); err != nil {
			t.Errorf("member %s while the agent is away: %v", name, err)
		}
	}
	// An object deleted while the agent is away: its FederatedObject goes
	// without waiting, its intent is deleted on the hub, an event says the
	// copy goes when the agent is back, and the copy stays until then.
	if err := admin.Delete(ctx, testenv.MakeDeployment("steady-b", ns).Obj()); err != nil {
		t.Fatal(err)
	}
	delete(before, "steady-b")
	testenv.Eventually(t, waitTimeout, "the FederatedObject of steady-b gone, and a CopyLeft event saying the agent deletes the copy", func(ctx context.Context) error {
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "steady-b.deployment.apps"}, &v1alpha1.FederatedObject{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("FederatedObject: %v", err)
		}
		events := &eventsv1.EventList{}
		if err := admin.List(ctx, events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "CopyLeft" && e.Regarding.Name == "steady-b" && strings.Contains(e.Note, "agent deletes the copy when it is back") {
				return nil
			}
		}
		return fmt.Errorf("no such event among %d", len(events.Items))
	})
	if _, err := memberDeployment(ctx, ns, "steady-b"); err != nil {
		t.Errorf("member steady-b while the agent is away: %v", err)
	}

	startAgent(t)
	waitReady(t, metav1.ConditionTrue)
	waitCopyAndIntentGone(t, ns, "steady-b")
	// A new object propagating proves the restarted agent works through
	// its queue (the existing intents come first, from its initial list).
	if err := admin.Create(ctx, testenv.MakeDeployment("after", ns).Obj()); err != nil {
		t.Fatal(err)
	}
	waitForCluster(t, ns, "after", v1alpha1.PropagationOK)
	for name, at := range before {
		d, err := memberDeployment(ctx, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if now, gen := flotillaWrite(d); !now.Equal(at) || gen != gens[name] {
			t.Errorf("member %s rewritten by the restarted agent: apply at %s (was %s), generation %d (was %d)", name, now, at, gen, gens[name])
		}
	}
}
