package testenv

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var nsCounter atomic.Int64

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a namespace unique to the test in the host and in every
// member, and deletes it from all of them when the test ends.
func (e *Environment) Namespace(t testing.TB) string {
	t.Helper()
	name := nonDNS.ReplaceAllString(strings.ToLower(t.Name()), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	name = fmt.Sprintf("%s-%d", strings.Trim(name, "-"), nsCounter.Add(1))
	ctx := context.Background()
	for _, c := range append([]*Cluster{e.Host}, e.Members...) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"flotilla.io/test": "true"}}}
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace %s in %s: %v", name, c.Name, err)
		}
		t.Cleanup(func() {
			if err := c.Client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
				t.Logf("delete namespace %s in %s: %v", name, c.Name, err)
			}
		})
	}
	return name
}
