// Package crd embeds the CustomResourceDefinitions that `make generate`
// writes into bases/ and installs them into a host control plane: missing
// ones may be created by anyone, existing ones are upgraded only by the
// leader (or an explicit install step), and only when they differ.
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
	apiextensionsv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/internal/poll"
)

//go:embed bases/*.yaml
var manifests embed.FS

// FieldManager is the field manager of Ensure's writes.
const FieldManager = "flotilla-crd-installer"

// CRDs returns the embedded CustomResourceDefinitions.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(manifests, "bases/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list embedded CRDs: %w", err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, name := range names {
		b, err := manifests.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read embedded %s: %w", path.Base(name), err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			return nil, fmt.Errorf("parse %s: %w", path.Base(name), err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// Mode says what Ensure may write.
type Mode int

const (
	// CreateMissing creates the CRDs the host lacks and never changes an
	// existing one: creating cannot downgrade anything, so a standby
	// replica (which may run an older or newer version than the leader)
	// may do it at start.
	CreateMissing Mode = iota
	// Upgrade also brings existing CRDs to this binary's version. Only the
	// leader, or an explicit install step, does it.
	Upgrade
)

// Result lists the CRDs Ensure wrote.
type Result struct {
	// Created and Updated name the CRDs created and updated.
	Created, Updated []string
}

// Ensure creates the missing CRDs and, in Upgrade mode, updates the ones
// that differ from this binary's (their spec is replaced by this binary's);
// a CRD already up to date is not written at all. It then
// waits until the apiserver serves every CRD.
func Ensure(ctx context.Context, cfg *rest.Config, mode Mode) (Result, error) {
	var res Result
	crds, err := CRDs()
	if err != nil {
		return res, err
	}
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return res, fmt.Errorf("CRD client: %w", err)
	}
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		live, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if _, err := api.Create(ctx, crd, metav1.CreateOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
				return res, fmt.Errorf("create CRD %s: %w", crd.Name, err)
			}
			res.Created = append(res.Created, crd.Name)
			continue
		case err != nil:
			return res, fmt.Errorf("read CRD %s: %w", crd.Name, err)
		case mode != Upgrade || UpToDate(crd, live):
			continue
		}
		if err := update(ctx, api, crd, live); err != nil {
			return res, err
		}
		res.Updated = append(res.Updated, crd.Name)
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, api, crd.Name); err != nil {
			return res, err
		}
	}
	return res, nil
}

// Install creates or upgrades the CRDs (Ensure in Upgrade mode), for an
// explicit install step and tests.
func Install(ctx context.Context, cfg *rest.Config) error {
	_, err := Ensure(ctx, cfg, Upgrade)
	return err
}

// UpToDate reports whether live already holds crd: the same spec once the
// apiserver's defaults are applied to crd, and crd's labels and
// annotations (others may add their own).
func UpToDate(crd, live *apiextensionsv1.CustomResourceDefinition) bool {
	want := crd.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(want)
	if !equality.Semantic.DeepEqual(want.Spec, live.Spec) {
		return false
	}
	for _, m := range []struct{ want, got map[string]string }{{want.Labels, live.Labels}, {want.Annotations, live.Annotations}} {
		for k, v := range m.want {
			if got, ok := m.got[k]; !ok || got != v {
				return false
			}
		}
	}
	return true
}

// update replaces live's spec with crd's and adds crd's labels and
// annotations (live's resourceVersion guards against a concurrent change).
func update(ctx context.Context, api apiextensionsv1client.CustomResourceDefinitionInterface, crd, live *apiextensionsv1.CustomResourceDefinition) error {
	next := live.DeepCopy()
	next.Spec = *crd.Spec.DeepCopy()
	for k, v := range crd.Labels {
		metav1.SetMetaDataLabel(&next.ObjectMeta, k, v)
	}
	for k, v := range crd.Annotations {
		metav1.SetMetaDataAnnotation(&next.ObjectMeta, k, v)
	}
	if _, err := api.Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("update CRD %s: %w", crd.Name, err)
	}
	return nil
}

// waitEstablished waits until the apiserver serves a CRD.
func waitEstablished(ctx context.Context, api apiextensionsv1client.CustomResourceDefinitionInterface, name string) error {
	err := poll.Until(ctx, establishTimeout, func(ctx context.Context) error {
		got, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("CRD %s is not established yet", name)
	})
	if err != nil {
		return fmt.Errorf("wait for CRD %s: %w", name, err)
	}
	return nil
}

// establishTimeout bounds the wait for a CRD to be served.
const establishTimeout = 30 * time.Second
