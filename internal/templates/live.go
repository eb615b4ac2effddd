package templates

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// The cache answers almost every question about a template. Some need the
// host itself: whether a template the cache still holds alive has been
// deleted (the garbage collector's watch may be ahead of the cache's),
// and what became of a template whose kind the cache does not watch
// (served.go).

// ErrKindNotServed is returned when the host serves no version of a kind.
var ErrKindNotServed = errors.New("the host does not serve this kind")

// ReadLive reads the template ref names from the host, past the cache,
// through the resource the cache watches the kind as, or the host's latest
// discovery lists (a CRD upgrade may have removed the version ref records;
// a mapping learned earlier may be stale). The controller-manager may list
// and watch every kind the cache holds, but get only those its role names:
// a refused get is asked again as a list by name. A missing object is a
// NotFound error (Gone); a kind the host does not serve, ErrKindNotServed.
func (c *Cache) ReadLive(ctx context.Context, ref v1alpha1.TemplateReference) (*unstructured.Unstructured, error) {
	gk := KeyOfReference(ref).GroupKind()
	k, ok := c.Lookup(gk)
	if !ok {
		k, ok = c.served.kind(gk)
	}
	if !ok {
		return nil, fmt.Errorf("read %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, ErrKindNotServed)
	}
	var res dynamic.ResourceInterface = c.client.Resource(k.GVR)
	if k.Namespaced {
		res = c.client.Resource(k.GVR).Namespace(ref.Namespace)
	}
	u, err := res.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsForbidden(err) {
		var list *unstructured.UnstructuredList
		list, err = res.List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", ref.Name).String()})
		if err == nil {
			u, err = nil, apierrors.NewNotFound(k.GVR.GroupResource(), ref.Name)
			for i := range list.Items {
				if list.Items[i].GetName() == ref.Name { // a server may ignore the selector
					u, err = &list.Items[i], nil
					break
				}
			}
		}
	}
	switch {
	case err == nil:
		return u, nil
	case pathNotFound(err):
		return nil, fmt.Errorf("read %s %s/%s: %w (%v)", ref.Kind, ref.Namespace, ref.Name, ErrKindNotServed, err)
	case apierrors.IsNotFound(err):
		return nil, err
	}
	return nil, fmt.Errorf("read %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
}

// pathNotFound reports whether a 404 came from a path the host does not
// serve (a resource or version gone since the client mapped it), rather
// than from a missing object: such an answer is not a Status.
func pathNotFound(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Type == metav1.CauseTypeUnexpectedServerResponse {
			return true
		}
	}
	return false
}

// Gone reports whether an error of ReadLive means the object no longer
// exists. A kind the host does not serve is not that (see ReadUnwatched).
func Gone(err error) bool {
	return apierrors.IsNotFound(err) && !errors.Is(err, ErrKindNotServed) && !pathNotFound(err)
}
