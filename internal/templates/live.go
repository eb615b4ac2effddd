package templates

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// The cache answers almost every question about a template. Some need the
// host itself: whether a template the cache still holds alive has been
// deleted (the garbage collector's watch may be ahead of the cache's),
// and what became of a template whose kind the cache does not watch
// (served.go).

// ErrKindNotServed is returned when the host serves no version of a kind.
var ErrKindNotServed = errors.New("the host does not serve this kind")

// ReadLive reads the template ref names from the host, past the cache, in
// the version the cache watches the kind in, or the host's latest
// discovery prefers (a CRD upgrade may have removed the version ref
// records). The controller-manager may list and watch every kind the cache
// holds, but get only those its role names: a refused get is asked again
// as a list by name. A missing object is a NotFound error (Gone); a kind
// the host does not serve, ErrKindNotServed.
func (c *Cache) ReadLive(ctx context.Context, reader client.Reader, ref v1alpha1.TemplateReference) (*unstructured.Unstructured, error) {
	gk := KeyOfReference(ref).GroupKind()
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	if k, ok := c.Lookup(gk); ok {
		gvk = k.GVK
	} else if k, ok := c.served.kind(gk); ok {
		gvk = k.GVK
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u)
	if apierrors.IsForbidden(err) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err = reader.List(ctx, list, client.InNamespace(ref.Namespace), client.MatchingFields{"metadata.name": ref.Name})
		switch {
		case err == nil && len(list.Items) == 0:
			err = apierrors.NewNotFound(schema.GroupResource{Group: gk.Group, Resource: ref.Kind}, ref.Name)
		case err == nil:
			u = &list.Items[0]
		}
	}
	switch {
	case err == nil:
		return u, nil
	case meta.IsNoMatchError(err) || pathNotFound(err):
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
