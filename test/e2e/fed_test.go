package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/localenv"
	hostscheme "github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// fed is a running `flotilla up` environment as a user sees it.
type fed struct {
	dir   string
	st    *localenv.State
	host  client.Client
	typed map[string]kubernetes.Interface // by cluster name
}

func startFed(t *testing.T) *fed {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "env")
	t.Cleanup(func() { flotilla(t, "down", "--purge", "--state-dir", dir) })
	if r := flotilla(t, "up", "--state-dir", dir); r.err != nil {
		t.Fatalf("up: %v\n%s", r.err, r.stderr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			log := filepath.Join(dir, "clusters", localenv.HostName, "logs", localenv.ControllerManager+".log")
			b, _ := os.ReadFile(log)
			t.Logf("controller-manager log (%s):\n%s", log, b)
		}
	})
	f := &fed{dir: dir, typed: map[string]kubernetes.Interface{}}
	f.reload(t)
	scheme, err := hostscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range f.st.Clusters {
		cfg, err := localenv.RESTConfig(c.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if f.typed[c.Name], err = kubernetes.NewForConfig(cfg); err != nil {
			t.Fatal(err)
		}
		if c.Role == localenv.RoleHost {
			if f.host, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return f
}

func (f *fed) reload(t *testing.T) {
	t.Helper()
	st, err := localenv.LoadState(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	f.st = st
}

func (f *fed) component(t *testing.T, cluster, name string) localenv.ComponentState {
	t.Helper()
	f.reload(t)
	cl, ok := f.st.Cluster(cluster)
	if !ok {
		t.Fatalf("no cluster %s", cluster)
	}
	for _, c := range cl.Components {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no component %s in %s", name, cluster)
	return localenv.ComponentState{}
}

func (f *fed) kubeconfig(name string) string {
	cl, _ := f.st.Cluster(name)
	return cl.Kubeconfig
}

func (f *fed) mc(ctx context.Context, name string) (*v1alpha1.MemberCluster, error) {
	mc := &v1alpha1.MemberCluster{}
	return mc, f.host.Get(ctx, types.NamespacedName{Name: name}, mc)
}

// waitCondition waits until MemberCluster name's Ready condition has status
// and, if taint is not empty, it carries that taint; with taint empty it
// must carry no managed taint.
func (f *fed) waitReady(t *testing.T, name string, status metav1.ConditionStatus, taint string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	testenv.Eventually(t, timeout, fmt.Sprintf("%s Ready=%s taint %q", name, status, taint), func(ctx context.Context) error {
		mc, err := f.mc(ctx, name)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != status {
			return fmt.Errorf("Ready condition %+v", c)
		}
		var managed []string
		for _, tn := range mc.Spec.Taints {
			if tn.Key == v1alpha1.TaintUnreachable || tn.Key == v1alpha1.TaintNotReady {
				managed = append(managed, tn.Key)
			}
		}
		if (taint == "" && len(managed) > 0) || (taint != "" && (len(managed) != 1 || managed[0] != taint)) {
			return fmt.Errorf("managed taints %v", managed)
		}
		return nil
	})
	return time.Since(start)
}

// reconcileCount sums the cluster controller's successful reconciles in a
// Prometheus text exposition: those that asked to be called again later
// (result requeue_after, as every push member with an expiring token does)
// succeeded too; only result="error" did not.
func reconcileCount(metrics string) int {
	n := 0
	for _, line := range strings.Split(metrics, "\n") {
		ok := false
		for _, result := range []string{"success", "requeue_after", "requeue"} {
			ok = ok || strings.HasPrefix(line, `controller_runtime_reconcile_total{controller="cluster",result="`+result+`"}`)
		}
		if ok {
			var v float64
			fmt.Sscanf(line[strings.LastIndex(line, " ")+1:], "%g", &v)
			n += int(v)
		}
	}
	return n
}

// noWrites fails the test if any MemberCluster changes within window after
// the list was read.
func noWrites(t *testing.T, f *fed, list *v1alpha1.MemberClusterList, window time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	cfg, err := localenv.RESTConfig(f.kubeconfig(localenv.HostName))
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	w, err := dyn.Resource(v1alpha1.GroupVersion.WithResource("memberclusters")).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch MemberClusters: %v", err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		now := &v1alpha1.MemberCluster{}
		if u, ok := ev.Object.(*unstructured.Unstructured); ok {
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, now)
		}
		old := &v1alpha1.MemberCluster{}
		for i := range list.Items {
			if list.Items[i].Name == now.Name {
				old = &list.Items[i]
			}
		}
		t.Fatalf("%s written while nothing changed (%s); diff of spec and status (-before +after):\n%s%s", now.Name, ev.Type,
			cmp.Diff(old.Spec, now.Spec), cmp.Diff(old.Status, now.Status))
	}
}

// getTable asks the host for a server-side table, as kubectl get does.
func getTable(t *testing.T, f *fed, path string) string {
	t.Helper()
	b, err := f.typed[localenv.HostName].CoreV1().RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("get %s as table: %v", path, err)
	}
	var pretty map[string]any
	_ = json.Unmarshal(b, &pretty)
	out, _ := json.Marshal(map[string]any{"columns": pretty["columnDefinitions"], "rows": pretty["rows"]})
	return string(out)
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(b)
}

// installCRDs applies config/crd/bases to a cluster, as
// `kubectl apply -f config/crd/bases` would.
func installCRDs(t *testing.T, kubeconfig string) {
	t.Helper()
	cfg, err := localenv.RESTConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	files, _ := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no CRDs in config/crd/bases")
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		force := true
		err = cs.CoreV1().RESTClient().Patch(types.ApplyYAMLPatchType).
			AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crdName(t, b)).
			Param("fieldManager", "e2e").Param("force", fmt.Sprint(force)).Body(b).Do(context.Background()).Error()
		if err != nil {
			t.Fatalf("apply %s: %v", file, err)
		}
	}
	testenv.Eventually(t, 30*time.Second, "CRDs served", func(ctx context.Context) error {
		_, err := cs.Discovery().ServerResourcesForGroupVersion("flotilla.io/v1alpha1")
		return err
	})
}

func crdName(t *testing.T, yamlDoc []byte) string {
	t.Helper()
	for _, line := range strings.Split(string(yamlDoc), "\n") {
		if strings.HasPrefix(line, "  name: ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "  name: "))
		}
	}
	t.Fatal("CRD without metadata.name")
	return ""
}
