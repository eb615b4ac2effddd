package tunnel

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAllowed(t *testing.T) {
	cases := []struct {
		method, path string
		ok           bool
		why          string
	}{
		{"GET", "/api/v1/pods", true, ""},
		{"GET", "/api/v1/pods?watch=true&resourceVersion=5", true, ""},
		{"GET", "/api/v1/namespaces/a/pods/p", true, ""},
		{"GET", "/api/v1/namespaces/a/events", true, ""},
		{"GET", "/api/v1/nodes/n1", true, ""},
		{"GET", "/apis/apps/v1/replicasets", true, ""},
		{"GET", "/apis/discovery.k8s.io/v1/namespaces/a/endpointslices", true, ""},
		{"GET", "/api/v1/namespaces/a/pods/p/log?follow=true", true, ""},
		{"POST", "/api/v1/namespaces/a/pods/p/exec?command=sh", true, ""},
		{"GET", "/api/v1/namespaces/a/pods/p/exec?command=sh", true, ""},
		{"POST", "/api/v1/namespaces/a/pods/p/portforward", true, ""},
		{"POST", "/api/v1/namespaces/a/pods/p/attach", true, ""},
		{"DELETE", "/api/v1/namespaces/a/pods/p", true, ""},

		{"GET", "/api/v1/namespaces/a/secrets", false, "list of secrets is not carried"},
		{"GET", "/api/v1/namespaces/a/secrets/s", false, "get of secrets is not carried"},
		{"GET", "/apis/apps/v1/deployments", false, "deployments.apps"},
		{"POST", "/api/v1/namespaces/a/pods", false, "create of pods"},
		{"PUT", "/api/v1/namespaces/a/pods/p", false, "update of pods"},
		{"PATCH", "/api/v1/nodes/n1", false, "patch of nodes"},
		{"DELETE", "/api/v1/namespaces/a/pods", false, "deletecollection of pods"},
		{"DELETE", "/api/v1/nodes/n1", false, "delete of nodes"},
		{"GET", "/api/v1/namespaces/a/pods/p/proxy", false, "pods/proxy"},
		{"POST", "/api/v1/namespaces/a/pods/p/eviction", false, "pods/eviction"},
		{"GET", "/api/v1/nodes/n1/proxy/logs", false, "nodes/proxy"},
		{"PUT", "/api/v1/namespaces/a/pods/p/status", false, "pods/status"},
		{"GET", "/api/v1/namespaces/a/pods/p/log/../../../secrets", false, "canonical"},
		{"GET", "/api/v1/namespaces/a//secrets", false, "canonical"},
		{"GET", "/api/v1/namespaces/a/pods%2Fp", false, "canonical"},
		{"GET", "/version", false, "not a resource request"},
		{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", false, "subjectaccessreviews"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			r := httptest.NewRequest(c.method, "http://member"+c.path, nil)
			err := Allowed(r)
			switch {
			case c.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !c.ok && err == nil:
				t.Fatal("allowed")
			case !c.ok && !strings.Contains(err.Error(), c.why):
				t.Fatalf("error %q does not say %q", err, c.why)
			}
		})
	}
}
