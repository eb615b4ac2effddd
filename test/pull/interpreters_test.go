package pull

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/localenv"
	"github.com/flotilla-io/flotilla/test/workloads/crds"
)

// customKinds are the two custom workloads the test federates: OpenKruise
// CloneSet (a stand-in CRD of the same shape) and Argo Rollouts Rollout
// (its real CRD).
var customKinds = []struct {
	gvr      schema.GroupVersionResource
	kind     string
	crd      string
	resource string // for kubectl
}{
	{schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"}, "CloneSet", "apps.kruise.io_clonesets.yaml", "clonesets.apps.kruise.io"},
	{schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}, "Rollout", "argoproj.io_rollouts.yaml", "rollouts.argoproj.io"},
}

// TestCustomWorkloads federates a CloneSet and an Argo Rollout of 9
// replicas each with the shipped WorkloadInterpreters applied by the user
// through the gateway: each is divided 3/3/3 over two push members and
// the pull member, the host's `kubectl get` shows the DESIRED, UPDATED and
// READY the members report (a test controller plays the members'
// workload controllers), the ConfigMap they mount follows them, scaling
// re-divides, and the replicas of a member whose apiserver stops fail
// over to the others.
func TestCustomWorkloads(t *testing.T) {
	host, _ := clients(t)
	ctx := context.Background()
	dyn := map[string]dynamic.Interface{}
	for _, name := range []string{localenv.HostName, push, push2, pull} {
		cs, _ := env.Cluster(name)
		cfg, err := localenv.RESTConfig(cs.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		dyn[name] = dynamic.NewForConfigOrDie(cfg)
		cl, err := client.New(cfg, client.Options{Scheme: host.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range customKinds {
			crd, err := crds.Load(k.crd)
			if err != nil {
				t.Fatal(err)
			}
			if err := cl.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("create CRD %s in %s: %v", crd.Name, name, err)
			}
			eventually(t, "CRD "+crd.Name+" established in "+name, func(ctx context.Context) error {
				got := &apiextensionsv1.CustomResourceDefinition{}
				if err := cl.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
					return err
				}
				return crds.Established(got)
			})
		}
	}
	grantCustomKinds(t, host)
	// Each member lists the kinds once its next discovery (every 30 s)
	// has seen the CRDs: a workload placed before that would leave that
	// member out of its first placement.
	for _, name := range []string{push, push2, pull} {
		eventually(t, name+" lists the custom kinds as writable", func(ctx context.Context) error {
			mc := &v1alpha1.MemberCluster{}
			if err := host.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
				return err
			}
			for _, k := range customKinds {
				if !slices.ContainsFunc(mc.Status.APIResources, func(r v1alpha1.APIResource) bool {
					return r.Group == k.gvr.Group && r.Resource == k.gvr.Resource && !r.ReadOnly
				}) {
					return fmt.Errorf("%s not in status.apiResources (or read-only)", k.resource)
				}
			}
			return nil
		})
	}

	// The user applies the shipped interpreters and the workloads through
	// the gateway, with stock kubectl.
	kubectlGateway(t, "apply", "-f", filepath.Join(root, "config", "interpreters"))
	for _, name := range []string{"cloneset.apps.kruise.io", "rollout.argoproj.io"} {
		eventually(t, "WorkloadInterpreter "+name+" Ready (TypeChecked)", func(ctx context.Context) error {
			wi := &v1alpha1.WorkloadInterpreter{}
			if err := host.Get(ctx, client.ObjectKey{Name: name}, wi); err != nil {
				return err
			}
			for _, c := range wi.Status.Conditions {
				if c.Type == "Ready" && c.Status == metav1.ConditionTrue && c.Reason == "TypeChecked" && c.ObservedGeneration == wi.Generation {
					return nil
				}
			}
			return fmt.Errorf("conditions %v", wi.Status.Conditions)
		})
		// The generation in use is recorded (with the controller-manager's
		// own permissions), for a restart to fall back on.
		eventually(t, "WorkloadInterpreter "+name+" recorded as a ControllerRevision", func(ctx context.Context) error {
			list := &appsv1.ControllerRevisionList{}
			if err := host.List(ctx, list, client.InNamespace(v1alpha1.SystemNamespace)); err != nil {
				return err
			}
			for _, rev := range list.Items {
				if rev.Annotations["flotilla.io/interpreter"] == name {
					return nil
				}
			}
			return fmt.Errorf("no ControllerRevision annotated flotilla.io/interpreter=%s among %d", name, len(list.Items))
		})
	}
	ns := "custom-workloads"
	manifest := filepath.Join(t.TempDir(), "workloads.yaml")
	if err := os.WriteFile(manifest, []byte(customWorkloadsYAML(ns)), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectlGateway(t, "apply", "-f", manifest)
	t.Cleanup(func() { _, _ = kubectlGatewayErr("delete", "namespace", ns, "--wait=false") })

	statusCtx, stopStatus := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopStatus(); wg.Wait() }()
	for _, m := range []string{push, push2, pull} {
		wg.Add(1)
		go func() { defer wg.Done(); playWorkloadController(statusCtx, dyn[m], ns) }()
	}

	all := []string{push, push2, pull}
	for _, k := range customKinds {
		waitDivided(t, dyn, k.gvr, ns, "web", map[string]int64{push: 3, push2: 3, pull: 3})
		waitHostColumns(t, k.resource, k.kind+"."+k.gvr.Group, ns, "web", 9)
	}
	eventually(t, "the mounted ConfigMap in every member", func(ctx context.Context) error {
		for _, m := range all {
			if _, err := dyn[m].Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).Get(ctx, "web-config", metav1.GetOptions{}); err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
		}
		return nil
	})

	// Scaling on the host re-divides (the CloneSet through its scale
	// subresource, as kubectl scale does).
	kubectlGateway(t, "scale", "-n", ns, "clonesets.apps.kruise.io/web", "--replicas", "6")
	waitDivided(t, dyn, customKinds[0].gvr, ns, "web", map[string]int64{push: 2, push2: 2, pull: 2})
	waitHostColumns(t, customKinds[0].resource, customKinds[0].kind+"."+customKinds[0].gvr.Group, ns, "web", 6)

	// A push member whose apiserver stops: after the failure threshold and
	// the grace period its replicas move to the others.
	resume := stop(t, push, "kube-apiserver")
	waitDivided(t, dyn, customKinds[0].gvr, ns, "web", map[string]int64{push2: 3, pull: 3})
	waitDivided(t, dyn, customKinds[1].gvr, ns, "web", map[string]int64{push2: 5, pull: 4}, 9)
	resume()
	waitHealthy(t, host, push)
}

// customWorkloadsYAML is the user's manifest: a namespace, a policy that
// divides both kinds over every member, the ConfigMap both mount, and a
// CloneSet and a Rollout of 9 replicas.
func customWorkloadsYAML(ns string) string {
	template := `
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
        volumeMounts: [{name: config, mountPath: /etc/web}]
      volumes:
      - name: config
        configMap: {name: web-config}`
	return `apiVersion: v1
kind: Namespace
metadata: {name: ` + ns + `}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: ` + ns + `}
data: {greeting: hello}
---
apiVersion: flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: custom, namespace: ` + ns + `}
spec:
  resourceSelectors:
  - {apiVersion: apps.kruise.io/v1alpha1, kind: CloneSet}
  - {apiVersion: argoproj.io/v1alpha1, kind: Rollout}
  placement:
    replicaScheduling: {type: Divide}
---
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: web, namespace: ` + ns + `}
spec:
  replicas: 9
  selector: {matchLabels: {app: web}}
  template:` + template + `
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web, namespace: ` + ns + `}
spec:
  replicas: 9
  selector: {matchLabels: {app: web}}
  strategy:
    canary:
      steps: [{setWeight: 50}]
  template:` + template + `
`
}

// grantCustomKinds gives the controller-manager what docs/custom-workloads.md
// tells an admin to grant for a custom kind with an interpreter.
func grantCustomKinds(t *testing.T, host client.Client) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "flotilla-custom-workloads"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps.kruise.io", "argoproj.io"}, Resources: []string{"clonesets", "rollouts"}, Verbs: []string{"get", "list", "watch", "patch"}},
			{APIGroups: []string{"apps.kruise.io", "argoproj.io"}, Resources: []string{"clonesets/status", "rollouts/status"}, Verbs: []string{"patch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "flotilla-custom-workloads"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: v1alpha1.SystemNamespace, Name: "flotilla-controller-manager"}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := host.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T: %v", o, err)
		}
	}
}

// playWorkloadController does what the members' CloneSet and Rollout
// controllers would: every copy in the namespace reports all its replicas
// ready and updated at its generation, until ctx ends. A member that does
// not answer (stopped) is skipped.
func playWorkloadController(ctx context.Context, member dynamic.Interface, ns string) {
	for ctx.Err() == nil {
		for _, k := range customKinds {
			reqCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
			list, err := member.Resource(k.gvr).Namespace(ns).List(reqCtx, metav1.ListOptions{})
			if err == nil {
				for i := range list.Items {
					reportReady(reqCtx, member, k.gvr, &list.Items[i])
				}
			}
			cancel()
		}
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// reportReady sets a copy's status to every replica ready, when it does
// not say so already.
func reportReady(ctx context.Context, member dynamic.Interface, gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	status := map[string]any{"replicas": n, "readyReplicas": n, "availableReplicas": n, "updatedReplicas": n}
	if u.GetKind() == "Rollout" {
		status["observedGeneration"] = fmt.Sprint(u.GetGeneration()) // Argo writes it as a string
		status["phase"], status["selector"] = "Healthy", "app=web"
	} else {
		status["observedGeneration"] = u.GetGeneration()
		status["updatedReadyReplicas"], status["updateRevision"], status["currentRevision"] = n, "web-1", "web-1"
		status["labelSelector"] = "app=web"
	}
	cur, _, _ := unstructured.NestedMap(u.Object, "status")
	same := true
	for k, v := range status {
		if fmt.Sprint(cur[k]) != fmt.Sprint(v) {
			same = false
		}
	}
	if same {
		return
	}
	u.Object["status"] = status
	_, _ = member.Resource(gvr).Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{})
}

// waitDivided waits until the members' copies hold the wanted replicas
// (members not named hold none, or no copy). With total, only the sum and
// the set of members count (the split of an odd total may go either way).
func waitDivided(t *testing.T, dyn map[string]dynamic.Interface, gvr schema.GroupVersionResource, ns, name string, want map[string]int64, total ...int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s %s/%s divided %v", gvr.Resource, ns, name, want), func(ctx context.Context) error {
		got := map[string]int64{}
		var sum int64
		for _, m := range []string{push, push2, pull} {
			if _, listed := want[m]; !listed {
				continue // a stopped member cannot be asked; what the host wants is checked through the others
			}
			reqCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
			u, err := dyn[m].Resource(gvr).Namespace(ns).Get(reqCtx, name, metav1.GetOptions{})
			cancel()
			if err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
			got[m], _, _ = unstructured.NestedInt64(u.Object, "spec", "replicas")
			sum += got[m]
		}
		if len(total) > 0 {
			if sum != total[0] {
				return fmt.Errorf("replicas %v, sum %d, want %d", got, sum, total[0])
			}
			return nil
		}
		for m, n := range want {
			if got[m] != n {
				return fmt.Errorf("replicas %v", got)
			}
		}
		return nil
	})
}

// waitHostColumns waits until `kubectl get` through the gateway shows the
// host object (of kindGroup, Kind.group) with want desired and want ready
// (the members' sum). While
// it does not, the error quotes the propagation status of each member
// (the FederatedObject's status.clusters), which says whose copy the host
// is still waiting for.
func waitHostColumns(t *testing.T, resource, kindGroup, ns, name string, want int) {
	t.Helper()
	eventually(t, fmt.Sprintf("kubectl get %s %s shows %d desired and ready", resource, name, want), func(ctx context.Context) error {
		out, err := kubectlGatewayErr("get", resource, name, "-n", ns, "--no-headers",
			"-o", "custom-columns=DESIRED:.spec.replicas,UPDATED:.status.updatedReplicas,READY:.status.readyReplicas,OBSERVED:.status.observedGeneration,GEN:.metadata.generation")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		f := strings.Fields(out)
		w := fmt.Sprint(want)
		if len(f) != 5 || f[0] != w || f[1] != w || f[2] != w || f[3] != f[4] {
			fo, _ := kubectlGatewayErr("get", "federatedobjects.flotilla.io", name+"."+strings.ToLower(kindGroup), "-n", ns, "-o", "jsonpath={.status.clusters}")
			return fmt.Errorf("got %q; propagation %s", strings.TrimSpace(out), strings.TrimSpace(fo))
		}
		return nil
	})
	out := kubectlGateway(t, "get", resource, name, "-n", ns)
	t.Logf("kubectl get %s %s:\n%s", resource, name, out)
}
