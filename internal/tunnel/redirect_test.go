package tunnel

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"
)

// TestMemberRedirectIsRefused: the agent does not pass a member's redirect
// back through the tunnel (the gateway's client would follow it with its
// credentials): the answer is a 502 without the Location.
func TestMemberRedirectIsRefused(t *testing.T) {
	member := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "https://elsewhere.example/steal")
		w.WriteHeader(http.StatusFound)
	}))
	defer member.Close()
	h, err := MemberHandler("m1", &rest.Config{Host: member.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/pods/p/log", nil))
	if rec.Code != http.StatusBadGateway || rec.Header().Get("Location") != "" {
		t.Fatalf("status %d, Location %q: want 502 and none", rec.Code, rec.Header().Get("Location"))
	}
}
