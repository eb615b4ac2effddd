// Package v1alpha1 holds the flotilla.io/v1alpha1 API: the kinds users and
// controllers exchange through the host control plane.
//
// The types carry kubebuilder markers; `make generate` turns them into
// deepcopy functions (zz_generated.deepcopy.go) and CRD manifests
// (config/crd/bases).
//
// +kubebuilder:object:generate=true
// +groupName=flotilla.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "flotilla.io", Version: "v1alpha1"}

var (
	// SchemeBuilder registers the kinds of this API with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	// AddToScheme adds the kinds of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
