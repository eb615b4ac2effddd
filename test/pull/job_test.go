package pull

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDividedJobsRunEachCompletionOnce: an Indexed and a non-indexed Job
// with completions 6 and parallelism 3 divided over the three members run
// 6 pods in all (2 per member, one at a time); the Indexed Job's members
// are told disjoint index offsets; the host shows 6/6 and Complete.
func TestDividedJobsRunEachCompletionOnce(t *testing.T) {
	_, members := clients(t)
	ns := "divided-jobs"
	job := func(name, mode string) string {
		return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %[1]s
spec:
  completions: 6
  parallelism: 3
  completionMode: %[2]s
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: registry.example.com/work:1.0`, name, mode)
	}
	applyDivided(t, ns, job("indexed", "Indexed")+"\n---\n"+job("plain", "NonIndexed"), "{apiVersion: batch/v1, kind: Job}", push, push2, pull)

	for _, name := range []string{"indexed", "plain"} {
		out := kubectlGateway(t, "wait", "--for=condition=complete", "job/"+name, "-n", ns, "--timeout=2m")
		if !strings.Contains(out, "condition met") {
			t.Errorf("kubectl wait job/%s:\n%s", name, out)
		}
		out = kubectlGateway(t, "get", "job", name, "-n", ns, "-o", "jsonpath={.status.succeeded}")
		if out != "6" {
			t.Errorf("host job/%s succeeded %q, want 6", name, out)
		}
	}
	offsets := map[string]bool{}
	succeeded := 0
	for cluster, cs := range members {
		for _, name := range []string{"indexed", "plain"} {
			j, err := cs.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s in %s: %v", name, cluster, err)
			}
			if *j.Spec.Completions != 2 || *j.Spec.Parallelism != 1 {
				t.Errorf("%s in %s: completions %d parallelism %d, want 2 and 1", name, cluster, *j.Spec.Completions, *j.Spec.Parallelism)
			}
			succeeded += int(j.Status.Succeeded)
			var offset string
			for _, e := range j.Spec.Template.Spec.Containers[0].Env {
				if e.Name == "FLOTILLA_COMPLETION_INDEX_OFFSET" {
					offset = e.Value
				}
			}
			if name == "indexed" {
				offsets[offset] = true
			} else if offset != "" {
				t.Errorf("the non-indexed Job in %s has an index offset %q", cluster, offset)
			}
		}
		pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodSucceeded {
				t.Errorf("pod %s/%s is %s", cluster, p.Name, p.Status.Phase)
			}
		}
	}
	if succeeded != 12 {
		t.Errorf("the members' Jobs succeeded %d times in all, want 12 (6 per Job)", succeeded)
	}
	if !offsets["0"] || !offsets["2"] || !offsets["4"] {
		t.Errorf("Indexed Job offsets %v, want 0, 2 and 4", offsets)
	}
}

// TestDividedJobFailsOnTheHost: a divided Job whose pods cannot run
// (its deadline passes in every member) is Failed on the host.
func TestDividedJobFailsOnTheHost(t *testing.T) {
	clients(t)
	ns := "failing-job"
	applyDivided(t, ns, `apiVersion: batch/v1
kind: Job
metadata:
  name: stuck
spec:
  completions: 3
  parallelism: 3
  activeDeadlineSeconds: 5
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {flotilla.io/no-such-node: "true"}
      containers:
      - name: work
        image: registry.example.com/work:1.0`, "{apiVersion: batch/v1, kind: Job}", push, push2, pull)
	out := kubectlGateway(t, "wait", "--for=condition=failed", "job/stuck", "-n", ns, "--timeout=2m")
	if !strings.Contains(out, "condition met") {
		t.Errorf("kubectl wait --for=condition=failed:\n%s", out)
	}
	reason := kubectlGateway(t, "get", "job", "stuck", "-n", ns, "-o", `jsonpath={.status.conditions[?(@.type=="Failed")].reason}`)
	if reason != "DeadlineExceeded" {
		t.Errorf("the host Job failed with reason %q, want the members' DeadlineExceeded", reason)
	}
}
