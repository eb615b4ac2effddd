package dispatch_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// createdMeanwhile answers the applier's read of an object with the
// member's 404 and then, before handing it back, has someone else create
// the object: the window between dispatch's read and its write.
type createdMeanwhile struct {
	rt     http.RoundTripper
	path   string
	create func() error
	once   sync.Once
	err    error
}

func (c *createdMeanwhile) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet && req.URL.Path == c.path && resp.StatusCode == http.StatusNotFound {
		c.once.Do(func() { c.err = c.create() })
	}
	return resp, err
}

// TestCopyCreatedMeanwhileIsNotTakenOver: an object of the copy's name
// that someone creates in the member between dispatch's read (not found)
// and its write keeps its fields: the write is refused and the copy is in
// conflict, as it is when the read sees the object. Before, the write was
// forced and took the object over.
func TestCopyCreatedMeanwhileIsNotTakenOver(t *testing.T) {
	testenv.Need(t, env)
	ns := env.Namespace(t)
	ctx := context.Background()
	res := env.Members[0].Dynamic.Resource(deploymentGVR).Namespace(ns)
	race := &createdMeanwhile{
		path: "/apis/apps/v1/namespaces/" + ns + "/deployments/web",
		create: func() error {
			_, err := res.Create(ctx, deployment(ns, "web", "team/own:1"), metav1.CreateOptions{FieldManager: "kubectl"})
			return err
		},
	}
	a := wrappedApplier(t, func(rt http.RoundTripper) http.RoundTripper { race.rt = rt; return race })

	got, err := a.Apply(ctx, deployment(ns, "web", "nginx:1.27"), dispatch.Options{})
	if race.err != nil {
		t.Fatalf("creating the other object: %v", race.err)
	}
	if got != dispatch.Conflict || !errors.Is(err, dispatch.ErrConflict) {
		t.Fatalf("Apply: %q, %v; want Conflict", got, err)
	}
	live, err := res.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	if image := containers[0].(map[string]any)["image"]; image != "team/own:1" {
		t.Errorf("the other object's image is %v, want it kept (team/own:1)", image)
	}
	for _, f := range live.GetManagedFields() {
		if strings.HasPrefix(f.Manager, dispatch.FieldManager) {
			t.Errorf("the other object has fields of %s: %+v", f.Manager, f)
		}
	}
}
