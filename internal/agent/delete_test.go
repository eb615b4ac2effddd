package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestPullDeleteRefusedIsReported: when the member refuses to delete a
// copy (an admission policy there), the agent says so on the intent
// (DeleteFailed, with the member's message) and tries again; once the
// member allows it, the copy and the intent go.
func TestPullDeleteRefusedIsReported(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	createClusterPolicy(t, ns, v1alpha1.PropagationSpec{
		ResourceSelectors: deploymentsIn(ns),
		Placement:         v1alpha1.Placement{ClusterNames: []string{pullName}},
	})
	dep := testenv.MakeDeployment("stuck", ns).Obj()
	if err := admin.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	waitForCluster(t, ns, "stuck", v1alpha1.PropagationOK)

	// The member refuses deletions in ns.
	member := env.Cluster("member-1").Client
	policies := member.AdmissionregistrationV1()
	vap := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Delete},
					Rule:       admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "oldObject.metadata.namespace != '" + ns + "'", Message: "deletions refused by the member's test policy"}},
		},
	}
	if _, err := policies.ValidatingAdmissionPolicies().Create(ctx, vap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = policies.ValidatingAdmissionPolicies().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: ns, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	if _, err := policies.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = policies.ValidatingAdmissionPolicyBindings().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	testenv.Eventually(t, waitTimeout, "the member's policy refuses a (dry-run) deletion", func(ctx context.Context) error {
		err := member.AppsV1().Deployments(ns).Delete(ctx, "stuck", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), "refused by the member's test policy") {
			return fmt.Errorf("dry-run delete: %v", err)
		}
		return nil
	})

	if err := admin.Delete(ctx, dep); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitTimeout, "the intent reports DeleteFailed with the member's message", func(ctx context.Context) error {
		ci, err := intentOf(ctx, ns, "stuck")
		if err != nil {
			return err
		}
		if ci.Status.Outcome != v1alpha1.IntentDeleteFailed || !strings.Contains(ci.Status.Message, "refused by the member's test policy") {
			return fmt.Errorf("intent status %+v", ci.Status)
		}
		return nil
	})
	if _, err := memberDeployment(ctx, ns, "stuck"); err != nil {
		t.Errorf("the member's copy while its deletion is refused: %v", err)
	}

	if err := policies.ValidatingAdmissionPolicyBindings().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCopyAndIntentGone(t, ns, "stuck") // the member allows it now
}

// TestPullShortLivedObjectsLeaveNothing: objects deleted while, or just
// after, their intents are written leave no intent and no copy behind. An
// intent created a moment before the delete may not be in the hub's intent
// cache yet; the cleanup must not take it for absent, or the agent would
// apply a copy nobody deletes. Deletes spread over the time it takes to
// place an object, so that some land in that window.
func TestPullShortLivedObjectsLeaveNothing(t *testing.T) {
	startControlPlane(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	createClusterPolicy(t, ns, v1alpha1.PropagationSpec{
		ResourceSelectors: deploymentsIn(ns),
		Placement:         v1alpha1.Placement{ClusterNames: []string{pullName}},
	})
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			dep := testenv.MakeDeployment(fmt.Sprintf("brief-%d", i), ns).Obj()
			if err := admin.Create(ctx, dep); err != nil {
				t.Errorf("create %s: %v", dep.Name, err)
				return
			}
			// Deleted after 0 to 300 ms: no sleep stands in for a
			// condition here, the spread is the point.
			<-time.After(time.Duration(i) * 20 * time.Millisecond)
			if err := admin.Delete(ctx, dep); err != nil {
				t.Errorf("delete %s: %v", dep.Name, err)
			}
		})
	}
	wg.Wait()
	for i := range n {
		name := fmt.Sprintf("brief-%d", i)
		testenv.Eventually(t, waitTimeout, "the FederatedObject of "+name+" gone", func(ctx context.Context) error {
			err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + ".deployment.apps"}, &v1alpha1.FederatedObject{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("FederatedObject: %v", err)
		})
		// Its cleanup is done: whatever intent it wrote is deleted by now,
		// and the agent deletes the copy before it lets the intent go.
		waitCopyAndIntentGone(t, ns, name)
	}
}
