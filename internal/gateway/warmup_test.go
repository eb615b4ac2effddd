package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestReadsWaitForTheCacheAfterStart: a gateway that starts while a ready
// member does not answer (its apiserver stopped) answers reads of member
// kinds with 429 and a Retry-After, as a kube-apiserver does while its
// cache initializes, instead of a list without that member's pods: an
// informer relisting after the gateway's restart would take them all for
// deleted. Once the member answers, its pods are served.
func TestReadsWaitForTheCacheAfterStart(t *testing.T) {
	joinMembers(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	memberNamespace(t, ns)
	makePod(t, env.Members[0].Client, ns, "a", nil)
	makePod(t, env.Members[1].Client, ns, "b", nil)
	env.Signal(t, env.Members[1].Name, "kube-apiserver", syscall.SIGSTOP)
	gw := startGateway(t)
	admin := adminThrough(t, gw)
	err := admin.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").MaxRetries(0).Do(ctx).Error()
	if !apierrors.IsTooManyRequests(err) {
		t.Errorf("list of pods while beta's are not read: %v, want 429", err)
	} else if s, ok := apierrors.SuggestsClientDelay(err); !ok || s != 2 {
		t.Errorf("429 without a Retry-After of 2 s: %v", err)
	}
	err = admin.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name("b").MaxRetries(0).Do(ctx).Error()
	if !apierrors.IsTooManyRequests(err) {
		t.Errorf("get of beta's pod while beta's are not read: %v, want 429, not 404", err)
	}
	env.Signal(t, env.Members[1].Name, "kube-apiserver", syscall.SIGCONT)
	testenv.Eventually(t, 30*time.Second, "both members' pods listed", func(ctx context.Context) error {
		l, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if got := podNames(l.Items); !slices.Equal(got, []string{"alpha/a", "beta/b"}) {
			return fmt.Errorf("pods %v", got)
		}
		return nil
	})
}
