package gateway

import (
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/endpoints/request"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/tunnel"
)

// TestIsTunnel: only the cluster-scoped MemberCluster's tunnel subresource
// is a tunnel request; a namespaced path to it would be authorized against
// that namespace's RoleBindings.
func TestIsTunnel(t *testing.T) {
	tunnelInfo := request.RequestInfo{IsResourceRequest: true, APIGroup: v1alpha1.GroupVersion.Group, APIVersion: v1alpha1.GroupVersion.Version,
		Resource: "memberclusters", Subresource: tunnel.Subresource, Name: "member-1", Verb: "create"}
	for _, tc := range []struct {
		name string
		edit func(*request.RequestInfo)
		want bool
	}{
		{name: "a MemberCluster's tunnel", edit: func(*request.RequestInfo) {}, want: true},
		{name: "under a namespace", edit: func(i *request.RequestInfo) { i.Namespace = "team-a" }},
		{name: "no name", edit: func(i *request.RequestInfo) { i.Name = "" }},
		{name: "another subresource", edit: func(i *request.RequestInfo) { i.Subresource = "status" }},
		{name: "another group", edit: func(i *request.RequestInfo) { i.APIGroup = "example.com" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := tunnelInfo
			tc.edit(&info)
			r := httptest.NewRequest("POST", "/", nil)
			r = r.WithContext(request.WithRequestInfo(r.Context(), &info))
			if got := isTunnel(r); got != tc.want {
				t.Errorf("isTunnel(%+v) = %v, want %v", info, got, tc.want)
			}
		})
	}
}
