package gateway_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/flotilla-io/flotilla/internal/gateway"
)

// TestProtocols: the gateway answers a client that offers HTTP/2 (as
// client-go does) over HTTP/1.1 unless --disable-http2-serving=false, and
// a watch in progress does not hold up another request of the same client
// (it opens a second connection).
func TestProtocols(t *testing.T) {
	if !gateway.NewOptions().SecureServing.DisableHTTP2Serving {
		t.Error("the gateway offers HTTP/2 by default; the default case below assumes it does not")
	}
	for _, tc := range []struct {
		name      string
		disable   bool
		wantMajor int
	}{
		{"default", true, 1},
		{"http2 asked for", false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := startGateway(t, func(o *gateway.Options) { o.SecureServing.DisableHTTP2Serving = tc.disable })
			cfg := rest.CopyConfig(gw)
			cfg.BearerToken = env.Host.Config.BearerToken
			hc, err := rest.HTTPClientFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ns := env.Namespace(t)
			get := func() *http.Response {
				t.Helper()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/api/v1/namespaces/"+ns, nil)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("GET namespace %s through the gateway: %s", ns, resp.Status)
				}
				return resp
			}
			if resp := get(); resp.ProtoMajor != tc.wantMajor {
				t.Errorf("a client offering HTTP/2 and HTTP/1.1 was answered over %s, want HTTP/%d", resp.Proto, tc.wantMajor)
			}

			// A watch holds its connection (HTTP/1.1) or stream (HTTP/2);
			// a get and a create of the same client still go through, and
			// the watch sees the create.
			cs := adminThrough(t, gw)
			w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			get()
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "seen"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			deadline := time.After(30 * time.Second)
			for seen := false; !seen; {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						t.Fatal("the watch through the gateway ended before the create was seen")
					}
					cm, _ := ev.Object.(*corev1.ConfigMap)
					seen = ev.Type == watch.Added && cm != nil && cm.Name == "seen"
				case <-deadline:
					t.Fatal("the watch through the gateway saw no ADDED seen within 30s of the create")
				}
			}
		})
	}
}
