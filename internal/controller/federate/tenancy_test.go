package federate_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/federate"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// waitTimeout bounds each wait for the controllers.
const waitTimeout = 90 * time.Second

// deploymentsIn selects the Deployments of one namespace.
func deploymentsIn(ns string) []v1alpha1.ResourceSelector {
	return []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns}}
}

// TestLabelCannotBorrowClusterPolicy: a namespace user labels a Deployment
// with an admin's ClusterPropagationPolicy that does not select the user's
// namespace. The object is not propagated, and an event says why.
func TestLabelCannotBorrowClusterPolicy(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	user := namespaceUser(t, ns)

	// An admin's policy for another namespace, one that adopts.
	borrowed := ns + "-payments"
	createClusterPolicy(t, borrowed, v1alpha1.PropagationSpec{
		ResourceSelectors:  deploymentsIn("payments"),
		Placement:          v1alpha1.Placement{ClusterNames: []string{memberName}},
		ConflictResolution: v1alpha1.ConflictAdopt,
	})
	// The namespace user may not write cluster policies...
	own := &v1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns + "-own"}}
	if err := user.Create(ctx, own); !apierrors.IsForbidden(err) {
		t.Fatalf("namespace user creating a ClusterPropagationPolicy: got %v, want Forbidden", err)
	}
	// ... nor borrow one with the label.
	dep := testenv.MakeDeployment("web", ns).Obj()
	dep.Labels[v1alpha1.LabelClusterPropagationPolicy] = borrowed
	if err := user.Create(ctx, dep); err != nil {
		t.Fatalf("namespace user creating a Deployment: %v", err)
	}

	// The event is recorded by the pass that decides not to propagate, so
	// once it is there, no FederatedObject may exist.
	var event *eventsv1.Event
	foKey := types.NamespacedName{Namespace: ns, Name: "web.deployment.apps"}
	testenv.Eventually(t, waitTimeout, "a "+federate.ReasonPolicyNotApplicable+" event (or a FederatedObject)", func(ctx context.Context) error {
		if err := admin.Get(ctx, foKey, &v1alpha1.FederatedObject{}); err == nil {
			return nil // the label was honoured: reported below
		}
		event = findEvent(ctx, t, ns, "Deployment", "web", federate.ReasonPolicyNotApplicable)
		if event == nil {
			return errNotYet
		}
		return nil
	})
	if err := admin.Get(ctx, foKey, &v1alpha1.FederatedObject{}); !apierrors.IsNotFound(err) {
		t.Fatalf("FederatedObject %s: got %v, want NotFound: the label borrowed ClusterPropagationPolicy %s", foKey, err, borrowed)
	}
	for _, want := range []string{v1alpha1.LabelClusterPropagationPolicy + "=" + borrowed, "ClusterPropagationPolicy " + borrowed, "do not select", "not propagated"} {
		if !strings.Contains(event.Note, want) {
			t.Errorf("event note %q does not mention %q", event.Note, want)
		}
	}
	if event.Type != "Warning" {
		t.Errorf("event type %s, want Warning", event.Type)
	}
	m := env.Cluster(memberName)
	if _, err := m.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("member Deployment %s/web: got %v, want NotFound", ns, err)
	}
}

// TestAdoptAnnotationOnlyNarrows: under an admin's ClusterPropagationPolicy
// without conflictResolution: Adopt, a namespace user's adopt annotation
// does not take over the member's existing object, and the Conflict says
// why. Under the namespace's own PropagationPolicy it does.
func TestAdoptAnnotationOnlyNarrows(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	user := namespaceUser(t, ns)
	m := env.Cluster(memberName)

	// The member already runs its own "legacy".
	existing := testenv.MakeDeployment("legacy", ns).Obj()
	existing.Labels["origin"] = "member"
	existing.Spec.Template.Spec.Containers[0].Image = "example.com/member-owned:1"
	if _, err := m.Client.AppsV1().Deployments(ns).Create(ctx, existing, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the member's own Deployment: %v", err)
	}
	createClusterPolicy(t, ns+"-abort", v1alpha1.PropagationSpec{
		ResourceSelectors: deploymentsIn(ns),
		Placement:         v1alpha1.Placement{ClusterNames: []string{memberName}},
	})
	dep := testenv.MakeDeployment("legacy", ns).Obj()
	dep.Annotations = map[string]string{v1alpha1.AnnotationConflictResolution: "adopt"}
	dep.Spec.Template.Spec.Containers[0].Image = "example.com/host:2"
	if err := user.Create(ctx, dep); err != nil {
		t.Fatalf("namespace user creating a Deployment: %v", err)
	}

	foKey := types.NamespacedName{Namespace: ns, Name: "legacy.deployment.apps"}
	st := waitForCluster(t, foKey, v1alpha1.PropagationConflict, v1alpha1.PropagationOK)
	if st.Reason != v1alpha1.PropagationConflict {
		t.Fatalf("cluster %s: %s %q, want Conflict: the annotation took over the member's object", memberName, st.Reason, st.Message)
	}
	for _, want := range []string{v1alpha1.AnnotationConflictResolution + ": adopt on the object is ignored", "ClusterPropagationPolicy " + ns + "-abort"} {
		if !strings.Contains(st.Message, want) {
			t.Errorf("Conflict message %q does not mention %q", st.Message, want)
		}
	}
	live, err := m.Client.AppsV1().Deployments(ns).Get(ctx, "legacy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if untouched(live) != nil {
		t.Errorf("the member's own Deployment was changed: %v", untouched(live))
	}

	// The namespace's own policy may honour the annotation (its authors
	// could say Adopt themselves); a PropagationPolicy wins the tie.
	pp := &v1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mine"},
		Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "legacy"}},
			Placement:         v1alpha1.Placement{ClusterNames: []string{memberName}},
		},
	}
	if err := user.Create(ctx, pp); err != nil {
		t.Fatalf("namespace user creating a PropagationPolicy: %v", err)
	}
	testenv.Eventually(t, waitTimeout, "the namespace's policy adopts the member's object", func(ctx context.Context) error {
		live, err := m.Client.AppsV1().Deployments(ns).Get(ctx, "legacy", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if live.Labels[v1alpha1.LabelManaged] != "true" || live.Spec.Template.Spec.Containers[0].Image != "example.com/host:2" {
			return fmt.Errorf("not adopted: labels %v, image %s", live.Labels, live.Spec.Template.Spec.Containers[0].Image)
		}
		return nil
	})
}

// untouched returns what shows that the member's own Deployment was
// written by Flotilla, or nil.
func untouched(d *appsv1.Deployment) error {
	if _, ok := d.Labels[v1alpha1.LabelManaged]; ok {
		return fmt.Errorf("labels %v", d.Labels)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "example.com/member-owned:1" {
		return fmt.Errorf("image %s", img)
	}
	for _, f := range d.ManagedFields {
		if f.Manager == "flotilla" {
			return fmt.Errorf("fields managed by flotilla")
		}
	}
	return nil
}

// waitForCluster waits until the FederatedObject reports one of reasons
// for the member and returns that cluster's status.
func waitForCluster(t *testing.T, key types.NamespacedName, reasons ...v1alpha1.PropagationReason) v1alpha1.ClusterPropagationStatus {
	t.Helper()
	var got v1alpha1.ClusterPropagationStatus
	testenv.Eventually(t, waitTimeout, fmt.Sprintf("FederatedObject %s reports %v for %s", key, reasons, memberName), func(ctx context.Context) error {
		fo := &v1alpha1.FederatedObject{}
		if err := admin.Get(ctx, key, fo); err != nil {
			return err
		}
		for _, c := range fo.Status.Clusters {
			if c.Cluster == memberName && slices.Contains(reasons, c.Reason) {
				got = c
				return nil
			}
		}
		return fmt.Errorf("status.clusters %+v", fo.Status.Clusters)
	})
	return got
}

// findEvent returns the newest event with reason about the named object,
// or nil.
func findEvent(ctx context.Context, t *testing.T, ns, kind, name, reason string) *eventsv1.Event {
	t.Helper()
	list, err := env.Host.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("list events: %v", err)
		return nil
	}
	var found *eventsv1.Event
	for i := range list.Items {
		e := &list.Items[i]
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
			found = e
		}
	}
	return found
}

// TestUserRoles checks the shipped example roles: the namespace roles
// aggregate into the built-in ones, grant only namespaced Flotilla kinds,
// and never let users write FederatedObjects.
func TestUserRoles(t *testing.T) {
	roles := userRoles(t)
	aggregates := map[string][]string{
		"flotilla-edit": {"rbac.authorization.k8s.io/aggregate-to-edit", "rbac.authorization.k8s.io/aggregate-to-admin"},
		"flotilla-view": {"rbac.authorization.k8s.io/aggregate-to-view"},
	}
	namespaced := []string{"propagationpolicies", "propagationpolicies/status", "overridepolicies", "federatedobjects", "federatedobjects/status"}
	writes := []string{"*", "create", "update", "patch", "delete", "deletecollection"}
	for name, labels := range aggregates {
		r := roles[name]
		if r == nil {
			t.Fatalf("%s: no ClusterRole %s", userRolesFile, name)
		}
		for _, l := range labels {
			if r.Labels[l] != "true" {
				t.Errorf("%s: label %s is %q, want \"true\"", name, l, r.Labels[l])
			}
		}
		for _, rule := range r.Rules {
			for _, res := range rule.Resources {
				if !slices.Contains(namespaced, res) {
					t.Errorf("%s grants %s: namespace users get only namespaced Flotilla kinds", name, res)
				}
				if strings.HasPrefix(res, "federatedobjects") && slices.ContainsFunc(rule.Verbs, func(v string) bool { return slices.Contains(writes, v) }) {
					t.Errorf("%s lets users write %s (%v)", name, res, rule.Verbs)
				}
			}
		}
	}
	for _, name := range []string{"flotilla-cluster-view", "flotilla-admin", "flotilla-hub-admin"} {
		if r := roles[name]; r == nil || len(r.Labels) != 0 {
			t.Errorf("%s: ClusterRole %s missing or aggregated (%v)", userRolesFile, name, r)
		}
	}
	// No wildcard; MemberClusters (endpoints, Secret names) not readable
	// with the view role; FederatedObjects and ClusterIntents written by
	// no one but the controller-manager; accepting pull members only with
	// flotilla-hub-admin.
	for name, r := range roles {
		for _, rule := range r.Rules {
			if slices.Contains(rule.Resources, "*") || slices.Contains(rule.Verbs, "*") {
				t.Errorf("%s: rule %+v has a wildcard", name, rule)
			}
			for _, res := range rule.Resources {
				write := slices.ContainsFunc(rule.Verbs, func(v string) bool { return slices.Contains(writes, v) })
				switch {
				case name == "flotilla-cluster-view" && strings.HasPrefix(res, "memberclusters"):
					t.Errorf("%s lets namespace users read %s", name, res)
				case write && (strings.HasPrefix(res, "federatedobjects") || strings.HasPrefix(res, "clusterintents")):
					t.Errorf("%s lets users write %s (%v)", name, res, rule.Verbs)
				case res == "memberclusters/accept" && name != "flotilla-hub-admin":
					t.Errorf("%s may accept pull members", name)
				}
			}
		}
	}
}
