package tunnel

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"
)

// TestMemberRedirectIsRefused: the agent does not pass a member's redirect
// back through the tunnel (the gateway's client would follow it with its
// credentials): the answer is a 502 without the Location. Other answers
// pass as they are.
func TestMemberRedirectIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		want   int
	}{
		{"found", http.StatusFound, http.StatusBadGateway},
		{"ok passes", http.StatusOK, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			member := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "https://elsewhere.example/steal")
				w.WriteHeader(tc.status)
			}))
			defer member.Close()
			h, err := MemberHandler("m1", &rest.Config{Host: member.URL}, nil)
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/pods/p/log", nil))
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d", rec.Code, tc.want)
			}
			if tc.want == http.StatusBadGateway && rec.Header().Get("Location") != "" {
				t.Fatalf("the redirect's Location reached the gateway: %q", rec.Header().Get("Location"))
			}
		})
	}
}
