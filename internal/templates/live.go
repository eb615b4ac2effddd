package templates

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// The cache answers almost every question about a template. Two need the
// host itself: whether a template the cache still holds alive has been
// deleted (the garbage collector's watch may be ahead of the cache's),
// and what became of a template whose kind the cache no longer watches
// (a CRD deleted with its objects).

// ReadLive reads the template ref names from the host, past the cache.
// The controller-manager may list and watch every kind the cache holds,
// but get only those its role names: a refused get is asked again as a
// list by name. Gone tells the errors that mean the template no longer
// exists.
func ReadLive(ctx context.Context, reader client.Reader, ref v1alpha1.TemplateReference) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ref.APIVersion)
	u.SetKind(ref.Kind)
	err := reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u)
	if !apierrors.IsForbidden(err) {
		if err != nil && !Gone(err) {
			err = fmt.Errorf("read %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
		}
		return u, err
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(ref.APIVersion)
	list.SetKind(ref.Kind + "List")
	if err := reader.List(ctx, list, client.InNamespace(ref.Namespace), client.MatchingFields{"metadata.name": ref.Name}); err != nil {
		if Gone(err) {
			return nil, err
		}
		return nil, fmt.Errorf("list %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	if len(list.Items) == 0 {
		return nil, apierrors.NewNotFound(u.GroupVersionKind().GroupVersion().WithResource(ref.Kind).GroupResource(), ref.Name)
	}
	return &list.Items[0], nil
}

// Gone reports whether an error of ReadLive means the template no longer
// exists: it is not found, or the host no longer serves its kind (a
// deleted CRD takes its objects with it).
func Gone(err error) bool {
	return apierrors.IsNotFound(err) || meta.IsNoMatchError(err)
}
