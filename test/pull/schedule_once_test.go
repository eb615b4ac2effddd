package pull

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDividedCronJobRunsInOneMember: a CronJob divided over three members
// is in one member only, which runs it; the host shows its schedule; when
// that member's apiserver stops, the CronJob moves to another member (and
// the old copy is removed once the member is back).
func TestDividedCronJobRunsInOneMember(t *testing.T) {
	host, members := clients(t)
	ns := "cron-once"
	applyDivided(t, ns, `apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: report
            image: registry.example.com/report:1.0`, "{apiVersion: batch/v1, kind: CronJob, name: report}", push, push2, pull)
	var runner string
	eventually(t, "the CronJob in exactly one member", func(ctx context.Context) error {
		var in []string
		for name, cs := range members {
			_, err := cs.BatchV1().CronJobs(ns).Get(ctx, "report", metav1.GetOptions{})
			switch {
			case err == nil:
				in = append(in, name)
			case !apierrors.IsNotFound(err):
				return err
			}
		}
		if len(in) != 1 {
			return fmt.Errorf("in %v", in)
		}
		runner = in[0]
		return nil
	})
	// The member's controller runs it at the next minute; the host's
	// status shows it.
	eventually(t, "a Job in "+runner+" and the host's lastScheduleTime", func(ctx context.Context) error {
		jobs, err := members[runner].BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(jobs.Items) == 0 {
			return fmt.Errorf("no Job in %s yet", runner)
		}
		out, err := kubectlGatewayErr("get", "cronjob", "report", "-n", ns, "-o", "jsonpath={.status.lastScheduleTime}")
		if err != nil || out == "" {
			return fmt.Errorf("host lastScheduleTime %q (%v)", out, err)
		}
		return nil
	})
	for name, cs := range members {
		if name == runner {
			continue
		}
		if jobs, err := cs.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{}); err != nil || len(jobs.Items) > 0 {
			t.Errorf("%s runs Jobs of the CronJob too: %d (%v)", name, len(jobs.Items), err)
		}
	}

	// Its member's apiserver stops: the CronJob moves to another member.
	resume := stop(t, runner, "kube-apiserver")
	eventually(t, "the CronJob in a member other than "+runner, func(ctx context.Context) error {
		for name, cs := range members {
			if name == runner {
				continue
			}
			if _, err := cs.BatchV1().CronJobs(ns).Get(ctx, "report", metav1.GetOptions{}); err == nil {
				return nil
			}
		}
		return fmt.Errorf("still only in %s", runner)
	})
	resume()
	waitHealthy(t, host, runner)
	eventually(t, "the CronJob in one member once "+runner+" is back", func(ctx context.Context) error {
		var in []string
		for name, cs := range members {
			if _, err := cs.BatchV1().CronJobs(ns).Get(ctx, "report", metav1.GetOptions{}); err == nil {
				in = append(in, name)
			}
		}
		if len(in) != 1 || in[0] == runner {
			return fmt.Errorf("in %v", in)
		}
		return nil
	})
}
