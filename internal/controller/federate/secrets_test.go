package federate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// The controller-manager runs with the shipped role, which reads Secrets
// only in flotilla-system: a Secret a propagated workload references
// follows it only once the optional grant is applied, while its ConfigMap
// follows at once. (Before, the role read every Secret and the template
// cache watched them all from the start.)
func TestSecretFollowerNeedsTheOptionalGrant(t *testing.T) {
	startControlPlane(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, StringData: map[string]string{"password": "s3cret"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"mode": "fast"}}
	dep := testenv.MakeDeployment("web", ns).Obj()
	dep.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}},
		{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "mode"}}},
	}
	pp := &v1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       v1alpha1.PropagationSpec{ResourceSelectors: deploymentsIn(ns), Placement: v1alpha1.Placement{ClusterNames: []string{memberName}}},
	}
	if err := admin.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, pp); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	waitForCluster(t, types.NamespacedName{Namespace: ns, Name: "web.deployment.apps"}, v1alpha1.PropagationOK)
	member := env.Cluster(memberName).Client
	testenv.Eventually(t, time.Minute, "ConfigMap cfg follows web to the member", func(ctx context.Context) error {
		_, err := member.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{})
		return err
	})
	// The ConfigMap and the Secret are the workload's followers alike: had
	// the Secret been readable, it would have gone with the ConfigMap.
	if _, err := member.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Secret db in the member without the optional grant (err %v)", err)
	}
	fo := &v1alpha1.FederatedObject{}
	if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db.secret"}, fo); !apierrors.IsNotFound(err) {
		t.Fatalf("FederatedObject db.secret without the optional grant (err %v)", err)
	}

	env.GrantControllerSecrets(t)
	testenv.Eventually(t, 2*time.Minute, "Secret db follows web once granted", func(ctx context.Context) error {
		s, err := member.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if string(s.Data["password"]) != "s3cret" {
			return fmt.Errorf("data %v", s.Data)
		}
		return nil
	})
}
