package templates

import (
	"context"
	"errors"
	"slices"
	"sort"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// cacheWithAccess returns a cache watching the kinds in watching, whose
// identity may list and watch only the resources in allowed.
func cacheWithAccess(allowed []string, watching ...schema.GroupKind) *Cache {
	cs := fake.NewSimpleClientset()
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = slices.Contains(allowed, r.Spec.ResourceAttributes.Resource)
		return true, r, nil
	})
	c := &Cache{kinds: map[schema.GroupKind]*watched{},
		access: access{authz: cs.AuthorizationV1(), onDemand: map[schema.GroupKind]Wanted{}, skipped: map[schema.GroupKind]string{}, idle: map[schema.GroupKind]int{}}}
	for _, gk := range watching {
		c.kinds[gk] = &watched{Kind: Kind{GVK: gk.WithVersion("v1")}}
	}
	return c
}

func TestFilter(t *testing.T) {
	deployments := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	widgets := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	discovered := func() map[schema.GroupKind]Kind {
		return map[schema.GroupKind]Kind{
			deployments: {GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
			widgets:     {GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}},
			SecretKind:  {GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}},
		}
	}
	wanted := func(want bool, err error) Wanted {
		return func(context.Context) (bool, string, error) { return want, "test", err }
	}
	tests := []struct {
		name     string
		allowed  []string
		watching []schema.GroupKind
		wanted   Wanted
		rounds   int
		want     []string
	}{
		{"only what may be listed; Secrets not wanted", []string{"deployments", "secrets"}, nil, wanted(false, nil), 1, []string{"Deployment.apps"}},
		{"Secrets wanted and allowed", []string{"deployments", "secrets"}, nil, wanted(true, nil), 1, []string{"Deployment.apps", "Secret"}},
		{"Secrets wanted but denied", []string{"deployments"}, nil, wanted(true, nil), 1, []string{"Deployment.apps"}},
		{"a custom kind once granted", []string{"deployments", "widgets"}, nil, wanted(false, nil), 1, []string{"Deployment.apps", "Widget.example.com"}},
		{"a watched kind is not asked about again", nil, []schema.GroupKind{deployments}, wanted(false, nil), 1, []string{"Deployment.apps"}},
		{"watched Secrets stay while the need is unknown", nil, []schema.GroupKind{SecretKind}, wanted(false, errors.New("cache down")), 1, []string{"Secret"}},
		{"unwatched Secrets stay unwatched while the need is unknown", []string{"secrets"}, nil, wanted(true, errors.New("cache down")), 1, nil},
		{"watched Secrets stay for two discoveries without a need", []string{"secrets"}, []schema.GroupKind{SecretKind}, wanted(false, nil), 2, []string{"Secret"}},
		{"watched Secrets go on the third discovery without a need", []string{"secrets"}, []schema.GroupKind{SecretKind}, wanted(false, nil), 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cacheWithAccess(tt.allowed, tt.watching...)
			c.OnDemand(SecretKind, tt.wanted)
			var found map[schema.GroupKind]Kind
			for range tt.rounds {
				found = discovered()
				c.filter(context.Background(), found)
			}
			var got []string
			for gk := range found {
				got = append(got, gk.String())
			}
			sort.Strings(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("watched %v, want %v", got, tt.want)
			}
		})
	}
}
