// Package crd embeds the CustomResourceDefinitions that `make generate`
// writes into bases/ and installs them into a host control plane.
package crd

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/internal/poll"
)

//go:embed bases/*.yaml
var manifests embed.FS

// FieldManager is the server-side apply field manager of Install.
const FieldManager = "flotilla-crd-installer"

// CRDs returns the embedded CustomResourceDefinitions.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(manifests, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, name := range names {
		b, err := manifests.ReadFile(name)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			return nil, fmt.Errorf("parse %s: %w", path.Base(name), err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// Install creates or updates the CRDs with server-side apply and waits until
// the apiserver serves them. Applying unchanged CRDs writes nothing.
func Install(ctx context.Context, cfg *rest.Config) error {
	crds, err := CRDs()
	if err != nil {
		return err
	}
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	force := true
	for _, crd := range crds {
		crd.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
		b, err := yaml.Marshal(crd)
		if err != nil {
			return err
		}
		if _, err := api.Patch(ctx, crd.Name, types.ApplyYAMLPatchType, b, metav1.PatchOptions{FieldManager: FieldManager, Force: &force}); err != nil {
			return fmt.Errorf("install CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		err := poll.Until(ctx, waitEstablished, func(ctx context.Context) error {
			got, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("CRD %s is not established yet", crd.Name)
		})
		if err != nil {
			return fmt.Errorf("wait for CRD %s: %w", crd.Name, err)
		}
	}
	return nil
}

// waitEstablished bounds the wait for a CRD to be served.
const waitEstablished = 30 * time.Second
