package apiproxy

import (
	"net/http/httptest"
	"net/url"
	"testing"
)

// TestDirect: a request goes to the apiserver's scheme and host, under the
// apiserver URL's path when it has one (a cluster behind a manager's
// prefix), never to the root of the URL's host.
func TestDirect(t *testing.T) {
	for _, tt := range []struct {
		host, request, wantURL string
	}{
		{"https://10.0.0.1:6443", "/api/v1/namespaces/a/pods/p/log?follow=true", "https://10.0.0.1:6443/api/v1/namespaces/a/pods/p/log?follow=true"},
		{"https://10.0.0.1:6443/", "/api/v1/pods", "https://10.0.0.1:6443/api/v1/pods"},
		{"https://rancher.example/k8s/clusters/c-1", "/api/v1/namespaces/a/pods/p/exec?command=sh", "https://rancher.example/k8s/clusters/c-1/api/v1/namespaces/a/pods/p/exec?command=sh"},
		{"https://rancher.example/k8s/clusters/c-1/", "/api/v1/pods", "https://rancher.example/k8s/clusters/c-1/api/v1/pods"},
		{"https://m.example/a%2Fb", "/api/v1/namespaces/a/configmaps/x%2Fy", "https://m.example/a%2Fb/api/v1/namespaces/a/configmaps/x%2Fy"},
		{"https://m.example/a%2Fb", "/api/v1/pods", "https://m.example/a%2Fb/api/v1/pods"},
		{"https://m.example/k8s", "/api/v1/namespaces/a/configmaps/x%2Fy", "https://m.example/k8s/api/v1/namespaces/a/configmaps/x%2Fy"},
	} {
		host, err := url.Parse(tt.host)
		if err != nil {
			t.Fatal(err)
		}
		out := httptest.NewRequest("GET", "https://gateway.example"+tt.request, nil)
		Direct(out, host)
		if got := out.URL.String(); got != tt.wantURL {
			t.Errorf("%s + %s = %s, want %s", tt.host, tt.request, got, tt.wantURL)
		}
		if out.Host != host.Host {
			t.Errorf("Host header %s, want %s", out.Host, host.Host)
		}
	}
}
