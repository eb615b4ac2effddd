package gateway

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/flotilla-io/flotilla/internal/membercache"
)

func TestSplitName(t *testing.T) {
	for _, tc := range []struct{ in, name, member string }{
		{"web", "web", ""},
		{"web@alpha", "web", "alpha"},
		{"a@b@c", "a@b", "c"},
		{"web@", "web@", ""}, // no member named: one name, found nowhere
		{"@alpha", "@alpha", ""},
		{"", "", ""},
	} {
		if name, member := splitName(tc.in); name != tc.name || member != tc.member {
			t.Errorf("splitName(%q) = %q, %q; want %q, %q", tc.in, name, member, tc.name, tc.member)
		}
	}
}

// TestFilterForNamesTheMember: NAME@member in the path or in a
// metadata.name field selector (which the filters do not read for a
// /watch/ path) limits to that member; two members named is refused.
func TestFilterForNamesTheMember(t *testing.T) {
	kinds, err := membercache.ParseKinds([]string{"pods"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, selector string
		cluster, field       string
		bad                  bool
	}{
		{name: "selector", selector: "metadata.name=web@m2", cluster: "m2", field: "metadata.name=web"},
		{name: "double equals", selector: "metadata.name==web@m2", cluster: "m2", field: "metadata.name=web"},
		{name: "not equal names no member", selector: "metadata.name!=web@m2", field: "metadata.name!=web"},
		{name: "path", path: "web@m1", cluster: "m1", field: "metadata.name=web"},
		{name: "path and the same member", path: "web@m1", selector: "metadata.name=web@m1", cluster: "m1", field: "metadata.name=web,metadata.name=web"},
		{name: "two members", path: "web@m1", selector: "metadata.name=web@m2", bad: true},
		{name: "none", selector: "status.phase=Running", field: "status.phase=Running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := filterFor(kinds[0], &request.RequestInfo{Namespace: "ns", Name: tc.path}, metav1.ListOptions{FieldSelector: tc.selector})
			if tc.bad {
				if !apierrors.IsBadRequest(err) {
					t.Fatalf("%v, want 400", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Cluster != tc.cluster || f.Field.String() != tc.field || f.Namespace != "ns" {
				t.Errorf("filter cluster %q field %q namespace %q, want %q %q ns", f.Cluster, f.Field, f.Namespace, tc.cluster, tc.field)
			}
		})
	}
}
