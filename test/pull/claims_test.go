package pull

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// TestClaimStaysWhenItsWorkloadMoves: a PersistentVolumeClaim that
// follows a Deployment stays in the member the Deployment leaves (a move
// never deletes data; the FederatedObject says Retained), while the
// Deployment's copy goes; deleting the host claim deletes every copy.
// The Deployment has 0 replicas: the members have no storage provisioner,
// so pods mounting the claim would never be Ready, and the graceful
// eviction would keep the old copy for its whole period.
func TestClaimStaysWhenItsWorkloadMoves(t *testing.T) {
	host, members := clients(t)
	ns := "claims-move"
	applyDivided(t, ns, `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 0
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
      - name: app
        image: registry.example.com/app:1.0
        volumeMounts: [{name: data, mountPath: /data}]
      volumes:
      - name: data
        persistentVolumeClaim: {claimName: data}`, "{apiVersion: apps/v1, kind: Deployment, name: app}", push, push2)
	in := func(ctx context.Context, cluster, kind string) (bool, error) {
		var err error
		if kind == "claim" {
			_, err = members[cluster].CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		} else {
			_, err = members[cluster].AppsV1().Deployments(ns).Get(ctx, "app", metav1.GetOptions{})
		}
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	eventually(t, "the Deployment and its claim in member-1 and member-2", func(ctx context.Context) error {
		for _, c := range []string{push, push2} {
			for _, k := range []string{"claim", "deployment"} {
				if ok, err := in(ctx, c, k); !ok {
					return fmt.Errorf("no %s in %s (%v)", k, c, err)
				}
			}
		}
		return nil
	})

	// The Deployment leaves member-2.
	kubectlGateway(t, "annotate", "deployment/app", "-n", ns, v1alpha1.AnnotationClusterNames+"="+push)
	eventually(t, "the Deployment gone from member-2, its claim kept there and marked Retained", func(ctx context.Context) error {
		if ok, err := in(ctx, push2, "deployment"); ok || err != nil {
			return fmt.Errorf("the Deployment is still in %s (%v)", push2, err)
		}
		if ok, err := in(ctx, push2, "claim"); !ok {
			return fmt.Errorf("the claim is gone from %s (%v)", push2, err)
		}
		fos := &v1alpha1.FederatedObjectList{}
		if err := host.List(ctx, fos, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, fo := range fos.Items {
			if fo.Spec.Template.Kind != "PersistentVolumeClaim" {
				continue
			}
			for _, c := range fo.Status.Clusters {
				if c.Cluster == push2 && c.Reason == v1alpha1.PropagationRetained {
					return nil
				}
			}
			return fmt.Errorf("the claim's clusters: %+v", fo.Status.Clusters)
		}
		return fmt.Errorf("no FederatedObject for the claim")
	})

	// Deleting the host's claim deletes the kept copy too.
	kubectlGateway(t, "delete", "pvc", "data", "-n", ns, "--wait=false")
	eventually(t, "the kept claim deleted with the host's", func(ctx context.Context) error {
		c, err := members[push2].CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && c.DeletionTimestamp != nil) {
			return nil
		}
		return fmt.Errorf("still in %s (%v)", push2, err)
	})
}
