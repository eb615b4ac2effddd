package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/cert"
)

func TestForwardableToken(t *testing.T) {
	withCert := &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{}}}
	tests := []struct {
		name      string
		header    http.Header
		tls       *tls.ConnectionState
		wantToken string
	}{
		{name: "a bearer token alone", header: http.Header{"Authorization": {"Bearer abc.def"}}, wantToken: "abc.def"},
		{name: "scheme in any case, spaces around", header: http.Header{"Authorization": {"  bearer abc  "}}, wantToken: "abc"},
		{name: "the authenticator's token: the second word", header: http.Header{"Authorization": {"Bearer abc extra"}}, wantToken: "abc"},
		{name: "TLS without a client certificate", header: http.Header{"Authorization": {"Bearer abc"}}, tls: &tls.ConnectionState{}, wantToken: "abc"},
		{name: "no credentials", header: http.Header{}},
		{name: "basic auth", header: http.Header{"Authorization": {"Basic YWxpY2U6cHc="}}},
		{name: "empty token", header: http.Header{"Authorization": {"Bearer "}}},
		{name: "two Authorization headers", header: http.Header{"Authorization": {"Bearer a", "Bearer b"}}},
		{name: "a client certificate too: its user is the one authenticated", header: http.Header{"Authorization": {"Bearer abc"}}, tls: withCert},
		{name: "impersonating someone", header: http.Header{"Authorization": {"Bearer abc"}, "Impersonate-User": {"bob"}}},
		{name: "impersonating a group only", header: http.Header{"Authorization": {"Bearer abc"}, "Impersonate-Group": {"admins"}}},
		{name: "impersonation header in another case", header: http.Header{"Authorization": {"Bearer abc"}, "impersonate-uid": {"1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/api/v1/configmaps", nil)
			r.Header, r.TLS = tt.header, tt.tls
			token, ok := forwardableToken(r)
			if token != tt.wantToken || ok != (tt.wantToken != "") {
				t.Errorf("forwardableToken = %q, %v; want %q", token, ok, tt.wantToken)
			}
		})
	}
}

// TestHostProxyForwardsUserToken: a request the bearer token
// authenticator alone authenticated reaches the host with that token, on a connection without
// the gateway's client certificate (the host would otherwise authenticate
// the certificate) and without impersonation headers; a client
// certificate, another authenticator, a request to impersonate or
// --forward-user-tokens=false goes as the gateway impersonating the user.
func TestHostProxyForwardsUserToken(t *testing.T) {
	type seen struct {
		auth, user  string
		gatewayCert bool
	}
	seenCh := make(chan seen, 1)
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seenCh <- seen{auth: r.Header.Get("Authorization"), user: r.Header.Get("Impersonate-User"), gatewayCert: len(r.TLS.PeerCertificates) > 0}
		_, _ = io.WriteString(w, `{"kind":"ConfigMap"}`)
	}))
	backend.EnableHTTP2 = true
	backend.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	backend.StartTLS()
	defer backend.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: backend.Certificate().Raw})
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("flotilla-gateway", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	gateway := &rest.Config{Host: backend.URL, BearerToken: "gateway-token",
		TLSClientConfig: rest.TLSClientConfig{CAData: ca, CertData: certPEM, KeyData: keyPEM}}
	infos := &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	front := func(forward bool) *httptest.Server {
		p, err := newHostProxy(gateway, forward)
		if err != nil {
			t.Fatal(err)
		}
		// The gateway's authenticators in their order: a client
		// certificate (or, here, another authenticator a header stands
		// for) before the bearer token.
		other := authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
			if (r.TLS != nil && len(r.TLS.PeerCertificates) > 0) || r.Header.Get("X-Other-Authenticator") != "" {
				return &authenticator.Response{User: alice}, true, nil
			}
			return nil, false, nil
		})
		tokens := bearertoken.New(authenticator.TokenFunc(func(_ context.Context, token string) (*authenticator.Response, bool, error) {
			return &authenticator.Response{User: alice}, token == "user-token", nil
		}))
		authn := markBearer(union.New(other, tokens))
		var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info, err := infos.NewRequestInfo(r)
			if err != nil {
				t.Error(err)
				return
			}
			if _, _, err := authn.AuthenticateRequest(r); err != nil {
				t.Error(err)
			}
			// What the filters leave: the user they settled on, no
			// Authorization and no Impersonate-* headers.
			stripCredentials(r.Header)
			p.ServeHTTP(w, r.WithContext(request.WithRequestInfo(request.WithUser(r.Context(), alice), info)))
		})
		if forward {
			h = withUserToken(h)
		}
		s := httptest.NewUnstartedServer(h)
		s.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
		s.StartTLS()
		t.Cleanup(s.Close)
		return s
	}
	forwarding, impersonatingOnly := front(true), front(false)
	asGateway := seen{auth: "Bearer gateway-token", user: "alice", gatewayCert: true}
	asUser := seen{auth: "Bearer user-token"}
	clientCert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		front      *httptest.Server
		path       string
		header     http.Header
		clientCert bool
		want       seen
	}{
		{name: "get with a token", front: forwarding, path: "/api/v1/namespaces/ns/configmaps/one", header: http.Header{"Authorization": {"Bearer user-token"}}, want: asUser},
		{name: "watch with a token", front: forwarding, path: "/api/v1/namespaces/ns/configmaps?watch=true", header: http.Header{"Authorization": {"Bearer user-token"}}, want: asUser},
		{name: "a client certificate and a token", front: forwarding, path: "/api/v1/namespaces/ns/configmaps/one", header: http.Header{"Authorization": {"Bearer user-token"}}, clientCert: true, want: asGateway},
		{name: "a token, but another authenticator decided", front: forwarding, path: "/api/v1/namespaces/ns/configmaps/one", header: http.Header{"Authorization": {"Bearer user-token"}, "X-Other-Authenticator": {"yes"}}, want: asGateway},
		{name: "a token and --as", front: forwarding, path: "/api/v1/namespaces/ns/configmaps/one", header: http.Header{"Authorization": {"Bearer user-token"}, "Impersonate-User": {"bob"}}, want: asGateway},
		{name: "no credentials", front: forwarding, path: "/api/v1/namespaces/ns/configmaps/one", header: http.Header{}, want: asGateway},
		{name: "--forward-user-tokens=false", front: impersonatingOnly, path: "/api/v1/namespaces/ns/configmaps/one", header: http.Header{"Authorization": {"Bearer user-token"}}, want: asGateway},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := tt.front.Client()
			if tt.clientCert {
				tr := client.Transport.(*http.Transport).Clone()
				tr.TLSClientConfig.Certificates = []tls.Certificate{clientCert}
				client = &http.Client{Transport: tr}
			}
			req, err := http.NewRequest(http.MethodGet, tt.front.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header = tt.header
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if got := <-seenCh; got != tt.want {
				t.Errorf("the host saw %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestTokensCheckedBy(t *testing.T) {
	dir := t.TempDir()
	write := func(name, server string) string {
		t.Helper()
		kc := clientcmdapi.NewConfig()
		kc.Clusters["c"] = &clientcmdapi.Cluster{Server: server}
		kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
		kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
		kc.CurrentContext = "c"
		path := filepath.Join(dir, name)
		if err := clientcmd.WriteToFile(*kc, path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	host := &rest.Config{Host: "https://127.0.0.1:6443"}
	if err := tokensCheckedBy(write("same", "https://127.0.0.1:6443/"), host); err != nil {
		t.Errorf("TokenReviews to the host: %v", err)
	}
	err := tokensCheckedBy(write("other", "https://auth.example.com"), host)
	if err == nil || !strings.Contains(err.Error(), "--authentication-kubeconfig has them checked by https://auth.example.com, not the host") {
		t.Errorf("TokenReviews elsewhere: %v, want a refusal", err)
	}
	if err := tokensCheckedBy(filepath.Join(dir, "missing"), host); err == nil {
		t.Error("a missing --authentication-kubeconfig is accepted")
	}
}
