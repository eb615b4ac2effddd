package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// The seeded workloads: workloads Deployments and as many ConfigMaps in
// namespace ns, propagated to every member.
const (
	ns        = "chaos"
	workloads = 20
	revKey    = "chaos.flotilla.io/rev" // pod template annotation
	cmKey     = "rev"                   // ConfigMap data key
)

func depName(i int) string { return fmt.Sprintf("app-%02d", i) }
func cmName(i int) string  { return fmt.Sprintf("cfg-%02d", i) }

// seed creates the namespace, a policy duplicating its Deployments and
// ConfigMaps to every member, and the workloads, then waits until every
// member has every copy and the host status settled.
func (e *chaosEnv) seed(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&v1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"}, Spec: v1alpha1.PropagationSpec{
			ResourceSelectors: []v1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}, {APIVersion: "v1", Kind: "ConfigMap"}},
		}},
	}
	for i := range workloads {
		labels := map[string]string{"app": depName(i)}
		objs = append(objs,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cmName(i)}, Data: map[string]string{cmKey: "seed"}},
			&appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: depName(i), Labels: labels},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](0),
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{revKey: "seed"}},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:1.0"}}},
					},
				},
			})
	}
	for _, o := range objs {
		if err := e.host.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	start := time.Now()
	e.waitRev(t, "seed", 3*time.Minute, members, nil)
	e.waitHostSettled(t, 2*time.Minute)
	t.Logf("%d Deployments and %d ConfigMaps on %d members (%d copies) in %s", workloads, workloads, len(members), 2*workloads*len(members), time.Since(start).Round(100*time.Millisecond))
}

// world is what must survive a fault: the UID of every member copy and
// host object, and each member's count of delete requests to the
// federated kinds.
type world struct {
	copies  map[string]types.UID // "member/Kind/name"
	host    map[string]types.UID // "Kind/name"
	deletes map[string]int       // by member
}

// observe records the world.
func (e *chaosEnv) observe(t *testing.T) world {
	t.Helper()
	w := world{copies: e.memberCopies(t), host: e.hostObjects(t), deletes: e.memberDeletes(t)}
	if want := 2 * workloads * len(members); len(w.copies) != want {
		t.Fatalf("%d member copies, want %d", len(w.copies), want)
	}
	return w
}

// nothingLost fails the test unless every member copy and host object of
// before still exists with the same UID and no member saw a delete of a
// federated kind.
func (e *chaosEnv) nothingLost(t *testing.T, before world) {
	t.Helper()
	after := world{copies: e.memberCopies(t), host: e.hostObjects(t), deletes: e.memberDeletes(t)}
	for _, diff := range []struct {
		what          string
		before, after map[string]types.UID
	}{{"member copy", before.copies, after.copies}, {"host object", before.host, after.host}} {
		var problems []string
		for _, k := range slices.Sorted(maps.Keys(diff.before)) {
			switch uid, ok := diff.after[k]; {
			case !ok:
				problems = append(problems, k+" is gone")
			case uid != diff.before[k]:
				problems = append(problems, fmt.Sprintf("%s was replaced (UID %s, was %s)", k, uid, diff.before[k]))
			}
		}
		if len(problems) > 0 {
			t.Errorf("%s lost: %s", diff.what, strings.Join(problems, "; "))
		}
	}
	if fmt.Sprint(after.deletes) != fmt.Sprint(before.deletes) {
		t.Errorf("delete requests to federated kinds in the members: before %v, after %v", before.deletes, after.deletes)
	}
	t.Logf("nothing lost: %d member copies and %d host objects with their UIDs; member deletes %v", len(after.copies), len(after.host), after.deletes)
}

// memberCopies lists the managed Deployments and ConfigMaps of ns in every
// member.
func (e *chaosEnv) memberCopies(t *testing.T) map[string]types.UID {
	t.Helper()
	ctx := context.Background()
	out := map[string]types.UID{}
	sel := metav1.ListOptions{LabelSelector: v1alpha1.LabelManaged + "=true"}
	for _, m := range members {
		deps, err := e.typed[m].AppsV1().Deployments(ns).List(ctx, sel)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		for _, d := range deps.Items {
			out[m+"/Deployment/"+d.Name] = d.UID
		}
		cms, err := e.typed[m].CoreV1().ConfigMaps(ns).List(ctx, sel)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		for _, c := range cms.Items {
			out[m+"/ConfigMap/"+c.Name] = c.UID
		}
	}
	return out
}

// hostObjects lists the templates and FederatedObjects of ns on the host.
func (e *chaosEnv) hostObjects(t *testing.T) map[string]types.UID {
	t.Helper()
	ctx := context.Background()
	out := map[string]types.UID{}
	lists := []client.ObjectList{&appsv1.DeploymentList{}, &corev1.ConfigMapList{}, &v1alpha1.FederatedObjectList{}}
	for _, l := range lists {
		if err := e.host.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			o := it.(client.Object)
			out[fmt.Sprintf("%T/%s", o, o.GetName())] = o.GetUID()
		}
	}
	return out
}

// memberDeletes sums each member's apiserver_request_total of DELETE
// requests (any code) to the federated kinds.
func (e *chaosEnv) memberDeletes(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range members {
		out[m] = e.memberRequests(t, m, "DELETE", "deployments", "configmaps", "namespaces")
	}
	return out
}

// memberRequests sums a member's apiserver_request_total for verb and
// resources (main resource, any code).
func (e *chaosEnv) memberRequests(t *testing.T, member, verb string, resources ...string) int {
	t.Helper()
	b, err := e.typed[member].CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("metrics of %s: %v", member, err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		l := promLabels(line)
		if l["verb"] != verb || l["subresource"] != "" || !slices.Contains(resources, l["resource"]) {
			continue
		}
		var v float64
		fmt.Sscanf(line[strings.LastIndex(line, " ")+1:], "%g", &v)
		n += int(v)
	}
	return n
}

// promLabels parses the labels of one exposition line.
func promLabels(line string) map[string]string {
	out := map[string]string{}
	open, end := strings.Index(line, "{"), strings.LastIndex(line, "}")
	if open < 0 || end < open {
		return out
	}
	for _, kv := range strings.Split(line[open+1:end], ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// change sets rev in every host ConfigMap's data and every Deployment's
// pod template: a change each member must receive.
func (e *chaosEnv) change(t *testing.T, rev string) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 2*workloads)
	for i := range workloads {
		wg.Go(func() {
			errs <- retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cm := &corev1.ConfigMap{}
				if err := e.host.Get(ctx, types.NamespacedName{Namespace: ns, Name: cmName(i)}, cm); err != nil {
					return err
				}
				cm.Data[cmKey] = rev
				return e.host.Update(ctx, cm)
			})
		})
		wg.Go(func() {
			errs <- retry.RetryOnConflict(retry.DefaultRetry, func() error {
				d := &appsv1.Deployment{}
				if err := e.host.Get(ctx, types.NamespacedName{Namespace: ns, Name: depName(i)}, d); err != nil {
					return err
				}
				d.Spec.Template.Annotations[revKey] = rev
				return e.host.Update(ctx, d)
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("change to %s: %v", rev, err)
		}
	}
}

// memberRev counts a member's copies of ns at rev: ConfigMaps and
// Deployments.
func (e *chaosEnv) memberRev(ctx context.Context, member, rev string) (cms, deps int, err error) {
	sel := metav1.ListOptions{LabelSelector: v1alpha1.LabelManaged + "=true"}
	cl, err := e.typed[member].CoreV1().ConfigMaps(ns).List(ctx, sel)
	if err != nil {
		return 0, 0, err
	}
	for _, c := range cl.Items {
		if c.Data[cmKey] == rev {
			cms++
		}
	}
	dl, err := e.typed[member].AppsV1().Deployments(ns).List(ctx, sel)
	if err != nil {
		return 0, 0, err
	}
	for _, d := range dl.Items {
		if d.Spec.Template.Annotations[revKey] == rev {
			deps++
		}
	}
	return cms, deps, nil
}

// waitRev waits until every member of want has every copy at rev and
// returns how long each took from the call; except, if set, names kinds
// a member must not receive ("member-3": "ConfigMap"), which are then
// checked to be still not at rev.
func (e *chaosEnv) waitRev(t *testing.T, rev string, timeout time.Duration, want []string, except map[string]string) map[string]time.Duration {
	t.Helper()
	start := time.Now()
	took := map[string]time.Duration{}
	testenv.Eventually(t, timeout, fmt.Sprintf("every copy in %v at %s", want, rev), func(ctx context.Context) error {
		var problems []string
		for _, m := range want {
			if _, done := took[m]; done {
				continue
			}
			cms, deps, err := e.memberRev(ctx, m, rev)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", m, err))
				continue
			}
			wantCMs, wantDeps := workloads, workloads
			switch except[m] {
			case "ConfigMap":
				wantCMs = 0
			case "Deployment":
				wantDeps = 0
			}
			if cms != wantCMs || deps != wantDeps {
				problems = append(problems, fmt.Sprintf("%s: %d/%d ConfigMaps, %d/%d Deployments", m, cms, wantCMs, deps, wantDeps))
				continue
			}
			took[m] = time.Since(start)
		}
		if len(problems) > 0 {
			return fmt.Errorf("%s", strings.Join(problems, "; "))
		}
		return nil
	})
	return took
}

// waitHostSettled waits until every FederatedObject of ns is Propagated
// with every member OK and every host Deployment's status observed its
// generation.
func (e *chaosEnv) waitHostSettled(t *testing.T, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, "host status settled", func(ctx context.Context) error {
		fos := &v1alpha1.FederatedObjectList{}
		if err := e.host.List(ctx, fos, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(fos.Items) != 2*workloads {
			return fmt.Errorf("%d FederatedObjects, want %d", len(fos.Items), 2*workloads)
		}
		for _, fo := range fos.Items {
			if !meta.IsStatusConditionTrue(fo.Status.Conditions, v1alpha1.ConditionPropagated) {
				return fmt.Errorf("%s not Propagated: %+v", fo.Name, fo.Status.Conditions)
			}
			ok := 0
			for _, c := range fo.Status.Clusters {
				if c.Reason == v1alpha1.PropagationOK {
					ok++
				}
			}
			if ok != len(members) {
				return fmt.Errorf("%s: clusters %+v", fo.Name, fo.Status.Clusters)
			}
		}
		deps := &appsv1.DeploymentList{}
		if err := e.host.List(ctx, deps, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, d := range deps.Items {
			if d.Status.ObservedGeneration != d.Generation {
				return fmt.Errorf("%s: status observedGeneration %d, generation %d", d.Name, d.Status.ObservedGeneration, d.Generation)
			}
		}
		return nil
	})
}

// converges makes a change after recovery and waits until every member
// has it and the host status settled.
func (e *chaosEnv) converges(t *testing.T, rev string) {
	t.Helper()
	start := time.Now()
	e.change(t, rev)
	e.waitRev(t, rev, 2*time.Minute, members, nil)
	e.waitHostSettled(t, 2*time.Minute)
	t.Logf("change %s reached every member and the host status settled in %s", rev, time.Since(start).Round(100*time.Millisecond))
}
