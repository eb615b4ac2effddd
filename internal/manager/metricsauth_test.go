package manager

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/internal/testenv"
)

// With --metrics-secure, /metrics answers over HTTPS only, and only to
// callers the host authenticates and allows to get /metrics.
func TestSecureMetrics(t *testing.T) {
	testenv.Need(t, env)
	ctx := context.Background()
	cs := env.Host.Client
	addr := freeAddr(t)
	opts := DefaultOptions()
	opts.Controllers, opts.LeaderElect, opts.InstallCRDs = nil, false, false
	opts.ProbeAddr, opts.MetricsAddr, opts.MetricsSecure = "0", addr, true
	startManager(t, opts)

	// A ServiceAccount token, without and then with the right to read
	// /metrics.
	ns := "default"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader", Namespace: ns}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cleanup(t, cs.CoreV1().ServiceAccounts(ns).Delete(context.Background(), sa.Name, metav1.DeleteOptions{}))
	})
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saToken := tr.Status.Token

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // self-signed
	get := func(scheme, token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	// The server is up once the admin reads metrics.
	testenv.Eventually(t, 30*time.Second, "the admin reads /metrics over HTTPS", func(context.Context) error {
		code, body, err := get("https", env.Host.Config.BearerToken)
		if err != nil {
			return err
		}
		if code != http.StatusOK || !strings.Contains(body, "controller_runtime") {
			return fmt.Errorf("status %d: %.200s", code, body)
		}
		return nil
	})
	if code, body, err := get("http", env.Host.Config.BearerToken); err == nil && (code == http.StatusOK || strings.Contains(body, "controller_runtime")) {
		t.Errorf("plain HTTP served metrics: %d", code)
	}
	for _, c := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a token the host does not know", "not-a-token", http.StatusUnauthorized},
		{"a ServiceAccount without the right", saToken, http.StatusForbidden},
	} {
		code, body, err := get("https", c.token)
		if err != nil || code != c.want {
			t.Errorf("%s: status %d (%v), want %d: %.200s", c.name, code, err, c.want, body)
		}
	}

	// Granting get on /metrics lets the ServiceAccount in.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-test-metrics-reader"}, Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cleanup(t, cs.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{}))
	})
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cleanup(t, cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{}))
	})
	testenv.Eventually(t, 30*time.Second, "the ServiceAccount reads /metrics once allowed", func(context.Context) error {
		code, body, err := get("https", saToken)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("status %d: %.200s", code, body)
		}
		return nil
	})
}

// cleanup reports a failed cleanup step.
func cleanup(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("cleanup: %v", err)
	}
}
