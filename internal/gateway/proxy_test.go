package gateway

import (
	"bufio"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
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
			"Impersonate-Group": {"dev"}, // the host adds system:authenticated itself
			"Impersonate-Extra-Authentication.kubernetes.io%2fcredential-Id": {"JTI=1"},
		}},
		{name: "a ServiceAccount's name: its groups as they are", user: &user.DefaultInfo{Name: "system:serviceaccount:ns:sa", Groups: []string{user.AllAuthenticated}},
			want: map[string][]string{"Impersonate-User": {"system:serviceaccount:ns:sa"}, "Impersonate-Group": {user.AllAuthenticated}}},
		{name: "only system:authenticated: no group asked for", user: &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated}},
			want: map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": nil}},
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
	h["x-remote-extra-scopes"] = []string{"all"} // not canonical: set directly
	stripCredentials(h)
	for _, k := range []string{"Authorization", "X-Remote-User", "X-Remote-Group", "Impersonate-User", "x-remote-extra-scopes"} {
		if v, ok := h[k]; ok || h.Get(k) != "" {
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

// TestHostProxy: requests the request timeout bounds reach the host over
// HTTP/1.1 and watches over HTTP/2, each with the gateway's credentials
// and the user's impersonation headers, never the client's credentials;
// the host's answer comes back unchanged, a watch's events as they come;
// a host that does not answer is a 503.
func TestHostProxy(t *testing.T) {
	type seen struct {
		proto, auth, user, forwardedFor, host, traceparent, remoteUser string
		groups                                                         []string
	}
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	seenCh := make(chan seen, 10)
	release := make(chan struct{})
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seenCh <- seen{proto: r.Proto, auth: r.Header.Get("Authorization"), user: r.Header.Get("Impersonate-User"),
			groups: r.Header.Values("Impersonate-Group"), forwardedFor: r.Header.Get("X-Forwarded-For"), host: r.Host,
			traceparent: r.Header.Get("Traceparent"), remoteUser: r.Header.Get("X-Remote-User")}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-From-Host", "yes")
		if r.URL.Query().Get("watch") == "true" {
			_, _ = io.WriteString(w, "{\"type\":\"ADDED\"}\n")
			w.(http.Flusher).Flush()
			<-release
			_, _ = io.WriteString(w, "{\"type\":\"DELETED\"}\n")
			return
		}
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, `{"kind":"ConfigMap","path":"`+r.URL.RequestURI()+`"}`)
	}))
	backend.EnableHTTP2 = true
	backend.StartTLS()
	defer backend.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: backend.Certificate().Raw})
	p, err := newHostProxy(&rest.Config{Host: backend.URL, BearerToken: "gateway-token", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, true)
	if err != nil {
		t.Fatal(err)
	}
	infos := &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"dev", user.AllAuthenticated}}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, err := infos.NewRequestInfo(r)
		if err != nil {
			t.Error(err)
			return
		}
		ctx := request.WithRequestInfo(request.WithUser(r.Context(), alice), info)
		p.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer front.Close()
	client := front.Client()
	client.Timeout = time.Minute // a proxy that held the watch's first event back fails rather than hangs
	get := func(path string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, front.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer user-token")
		req.Header.Set("Traceparent", traceparent)
		req.Header.Set("X-Remote-User", "system:admin") // claims an identity: must not reach the host
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	check := func(what, proto string) {
		t.Helper()
		s := <-seenCh
		if s.proto != proto {
			t.Errorf("%s reached the host over %s, want %s", what, s.proto, proto)
		}
		if s.auth != "Bearer gateway-token" || s.user != "alice" || !slices.Equal(s.groups, []string{"dev"}) {
			t.Errorf("%s: the host saw Authorization %q, Impersonate-User %q, Impersonate-Group %q; want the gateway's token as alice [dev]", what, s.auth, s.user, s.groups)
		}
		if s.forwardedFor != "127.0.0.1" || s.host != strings.TrimPrefix(backend.URL, "https://") {
			t.Errorf("%s: X-Forwarded-For %q, Host %q", what, s.forwardedFor, s.host)
		}
		if s.remoteUser != "" {
			t.Errorf("%s: the client's X-Remote-User %q reached the host", what, s.remoteUser)
		}
		if s.traceparent != traceparent {
			t.Errorf("%s: the host saw traceparent %q, want the client's %q (the gateway records no trace of its own)", what, s.traceparent, traceparent)
		}
	}

	resp := get("/api/v1/namespaces/ns/configmaps/one?resourceVersion=0")
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot || resp.Header.Get("X-From-Host") != "yes" ||
		string(body) != `{"kind":"ConfigMap","path":"/api/v1/namespaces/ns/configmaps/one?resourceVersion=0"}` {
		t.Errorf("get: %d %v %s; want the host's answer unchanged", resp.StatusCode, resp.Header, body)
	}
	check("get", "HTTP/1.1")

	resp = get("/api/v1/namespaces/ns/configmaps?watch=true")
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	first, err := events.ReadString('\n')
	if err != nil || first != "{\"type\":\"ADDED\"}\n" {
		t.Errorf("the watch's first event before the host ends the watch: %q, %v", first, err)
	}
	close(release)
	more, _ := io.ReadAll(events)
	if string(more) != "{\"type\":\"DELETED\"}\n" {
		t.Errorf("the watch's second event: %q", more)
	}
	check("watch", "HTTP/2.0")

	backend.Close()
	resp = get("/api/v1/namespaces/ns/configmaps/one")
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "the host apiserver did not answer") {
		t.Errorf("a host that does not answer: %d %s, want 503", resp.StatusCode, body)
	}
}
