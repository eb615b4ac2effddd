package pull

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// dbPods returns, for every db-N pod in the members, its member and uid.
func dbPods(ctx context.Context, members map[string]kubernetes.Interface, ns string) (map[string][2]string, error) {
	out := map[string][2]string{}
	for name, cs := range members {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, p := range l.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			if was, dup := out[p.Name]; dup {
				return nil, fmt.Errorf("pod %s exists in %s and %s", p.Name, was[0], name)
			}
			out[p.Name] = [2]string{name, string(p.UID)}
		}
	}
	return out, nil
}

// waitOrdinals waits until the db pods are exactly db-0..db-(n-1), each in
// one member, and returns them.
func waitOrdinals(t *testing.T, members map[string]kubernetes.Interface, ns string, n int) map[string][2]string {
	t.Helper()
	want := make([]string, 0, n)
	for i := range n {
		want = append(want, fmt.Sprintf("db-%d", i))
	}
	sort.Strings(want)
	var pods map[string][2]string
	eventually(t, fmt.Sprintf("pods db-0..db-%d, each once in the federation", n-1), func(ctx context.Context) error {
		var err error
		if pods, err = dbPods(ctx, members, ns); err != nil {
			return err
		}
		if got := slices.Sorted(maps.Keys(pods)); !slices.Equal(got, want) {
			return fmt.Errorf("pods %v", pods)
		}
		return nil
	})
	return pods
}

// TestStatefulSetIdentitiesAcrossMembers: a StatefulSet divided over the
// three members (two push, one pull) has each ordinal once in the
// federation; scaling up appends ordinals and scaling down removes the
// highest, without touching the other pods; the host's status and
// `kubectl rollout status` follow a template change across members, and a
// partitioned one by the federation's ordinals.
func TestStatefulSetIdentitiesAcrossMembers(t *testing.T) {
	_, members := clients(t)
	ns := "stateful"
	applyDivided(t, ns, `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  replicas: 6
  serviceName: db
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: registry.example.com/db:1.0`, "{apiVersion: apps/v1, kind: StatefulSet, name: db}", push, push2, pull)
	first := waitOrdinals(t, members, ns, 6)
	per := map[string]int{}
	for _, p := range first {
		per[p[0]]++
	}
	if len(per) != 3 {
		t.Errorf("db's 6 pods are in %v, want all three members", per)
	}

	kubectlGateway(t, "scale", "statefulset/db", "-n", ns, "--replicas", "8")
	grown := waitOrdinals(t, members, ns, 8)
	for name, was := range first {
		if grown[name] != was {
			t.Errorf("scale-up touched %s: was %v, now %v", name, was, grown[name])
		}
	}
	if grown["db-6"][0] != grown["db-7"][0] || grown["db-6"][0] != first["db-5"][0] {
		t.Errorf("db-6 and db-7 went to %s and %s, want the member of db-5 (%s)", grown["db-6"][0], grown["db-7"][0], first["db-5"][0])
	}

	kubectlGateway(t, "scale", "statefulset/db", "-n", ns, "--replicas", "4")
	shrunk := waitOrdinals(t, members, ns, 4)
	for name, now := range shrunk {
		if first[name] != now {
			t.Errorf("scale-down touched %s: was %v, now %v", name, first[name], now)
		}
	}

	// A template change rolls out in every member; the host's status
	// says when it is done.
	kubectlGateway(t, "set", "image", "statefulset/db", "-n", ns, "db=registry.example.com/db:2.0")
	out := kubectlGateway(t, "rollout", "status", "statefulset/db", "-n", ns, "--timeout=3m")
	if !strings.Contains(out, "complete") && !strings.Contains(out, "rolling update complete") {
		t.Errorf("kubectl rollout status on the host:\n%s", out)
	}
	eventually(t, "every db pod on the new image", func(ctx context.Context) error {
		for name, cs := range members {
			l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
			if err != nil {
				return err
			}
			for _, p := range l.Items {
				if img := p.Spec.Containers[0].Image; img != "registry.example.com/db:2.0" {
					return fmt.Errorf("%s/%s runs %s", name, p.Name, img)
				}
			}
		}
		return nil
	})
	if _, err := dbPods(context.Background(), members, ns); err != nil {
		t.Error(err)
	}

	// A partitioned update counts the federation's ordinals: with
	// partition 2, db-2 and db-3 take the new image in whichever member
	// runs them, db-0 and db-1 keep theirs.
	kubectlGateway(t, "patch", "statefulset/db", "-n", ns, "--type", "merge", "-p",
		`{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}},"template":{"spec":{"containers":[{"name":"db","image":"registry.example.com/db:3.0"}]}}}}`)
	out = kubectlGateway(t, "rollout", "status", "statefulset/db", "-n", ns, "--timeout=3m")
	if !strings.Contains(out, "partitioned roll out complete") {
		t.Errorf("kubectl rollout status of a partitioned update on the host:\n%s", out)
	}
	eventually(t, "db-2 and db-3 on 3.0, db-0 and db-1 on 2.0", func(ctx context.Context) error {
		want := map[string]string{"db-0": "2.0", "db-1": "2.0", "db-2": "3.0", "db-3": "3.0"}
		for name, cs := range members {
			l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
			if err != nil {
				return err
			}
			for _, p := range l.Items {
				if img := p.Spec.Containers[0].Image; img != "registry.example.com/db:"+want[p.Name] {
					return fmt.Errorf("%s/%s runs %s", name, p.Name, img)
				}
			}
		}
		return nil
	})
}
