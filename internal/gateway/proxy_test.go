package gateway

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
)

func TestImpersonating(t *testing.T) {
	var got http.Header
	backend := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		got = r.Header.Clone()
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
	})
	tests := []struct {
		name    string
		user    user.Info
		want    map[string][]string
		wantErr bool
	}{
		{name: "no user: refused, never sent as the gateway itself", wantErr: true},
		{name: "user, groups, uid and extras", user: &user.DefaultInfo{
			Name: "alice", UID: "42", Groups: []string{"dev", "system:authenticated"},
			Extra: map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=1"}},
		}, want: map[string][]string{
			"Impersonate-User":  {"alice"},
			"Impersonate-Uid":   {"42"},
			"Impersonate-Group": {"dev", "system:authenticated"},
			"Impersonate-Extra-Authentication.kubernetes.io%2fcredential-Id": {"JTI=1"},
		}},
		{name: "anonymous", user: &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}, want: map[string][]string{
			"Impersonate-User": {user.Anonymous}, "Impersonate-Group": {user.AllUnauthenticated},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			r := httptest.NewRequest(http.MethodGet, "https://host/api/v1/pods", nil)
			if tt.user != nil {
				r = r.WithContext(request.WithUser(r.Context(), tt.user))
			}
			resp, err := impersonating(backend).RoundTrip(r)
			if tt.wantErr {
				if err == nil || got != nil {
					t.Fatalf("request without a user was sent (err %v)", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			for k, v := range tt.want {
				if !slices.Equal(got.Values(k), v) {
					t.Errorf("header %s = %q, want %q (all: %v)", k, got.Values(k), v, got)
				}
			}
		})
	}
}

func TestOwnPath(t *testing.T) {
	for p, want := range map[string]bool{
		"/healthz": true, "/readyz": true, "/readyz/host": true, "/livez": true, "/metrics": true,
		"/api": false, "/apis/apps/v1": false, "/version": false, "/openapi/v2": false, "/healthzz": false, "/": false,
	} {
		if got := ownPath(p); got != want {
			t.Errorf("ownPath(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestStripCredentials(t *testing.T) {
	h := http.Header{}
	h.Set("Authorization", "Bearer user-token")
	h.Set("X-Remote-User", "admin")
	h.Set("X-Remote-Group", "system:masters")
	h.Set("Impersonate-User", "admin")
	h.Set("Sec-WebSocket-Protocol", "v5.channel.k8s.io, base64url.bearer.authorization.k8s.io.dXNlcg, v4.channel.k8s.io")
	h.Set("Accept", "application/json")
	stripCredentials(h)
	for _, k := range []string{"Authorization", "X-Remote-User", "X-Remote-Group", "Impersonate-User"} {
		if v := h.Get(k); v != "" {
			t.Errorf("%s kept: %q", k, v)
		}
	}
	if got := h.Get("Sec-WebSocket-Protocol"); got != "v5.channel.k8s.io,v4.channel.k8s.io" {
		t.Errorf("Sec-WebSocket-Protocol %q, want the channel protocols without the bearer token", got)
	}
	if h.Get("Accept") != "application/json" {
		t.Error("Accept dropped")
	}
}
