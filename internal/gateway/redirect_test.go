package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/flotilla-io/flotilla/internal/apiproxy"
)

// TestMemberRedirectIsRefused: a member apiserver that answers a routed
// pod request with a redirect does not get the user's client sent
// elsewhere: the gateway answers 502 without the Location.
func TestMemberRedirectIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		want   int
	}{
		{"found", http.StatusFound, http.StatusBadGateway},
		{"temporary", http.StatusTemporaryRedirect, http.StatusBadGateway},
		{"ok passes", http.StatusOK, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			member := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "https://elsewhere.example/steal")
				w.WriteHeader(tc.status)
			}))
			defer member.Close()
			rt, err := newMemberRoute("member-1", &rest.Config{Host: member.URL})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/pods/p/log", nil)
			out := req.Clone(req.Context())
			apiproxy.Direct(out, rt.host)
			rec := httptest.NewRecorder()
			rt.handler.ServeHTTP(rec, out)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d (body %q)", rec.Code, tc.want, rec.Body.String())
			}
			if tc.want == http.StatusBadGateway && rec.Header().Get("Location") != "" {
				t.Fatalf("the redirect's Location reached the client: %q", rec.Header().Get("Location"))
			}
		})
	}
}
