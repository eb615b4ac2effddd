// Package admission embeds the admission policies Flotilla installs into
// the host control plane (today: deletion protection, a
// ValidatingAdmissionPolicy and its binding) and installs them. Like the
// CRDs, they are written only when missing or different from this
// binary's, so that a restart writes nothing.
package admission

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

//go:embed deletion-protection.yaml
var deletionProtection []byte

// DeletionProtectionName names the ValidatingAdmissionPolicy (and its
// binding) that refuses to delete objects annotated
// flotilla.io/deletion-protection: "true".
const DeletionProtectionName = "flotilla.io-deletion-protection"

// FieldManager is the field manager of Ensure's writes.
const FieldManager = "flotilla-admission-installer"

// AnnotationManifestHash, on an installed policy or binding, holds the hash
// of the manifest it was written from; Ensure rewrites an object whose hash
// differs (another version installed it, or someone edited it).
const AnnotationManifestHash = "flotilla.io/manifest-hash"

// Policies holds the embedded admission objects.
type Policies struct {
	// Policies are the ValidatingAdmissionPolicies.
	Policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	// Bindings are their bindings.
	Bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// Load parses the embedded manifests and stamps each object with the hash
// of its manifest.
func Load() (Policies, error) {
	var out Policies
	dec := utilyaml.NewDocumentDecoder(io.NopCloser(bytes.NewReader(deletionProtection)))
	defer dec.Close()
	buf := make([]byte, len(deletionProtection))
	for {
		n, err := dec.Read(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, fmt.Errorf("read embedded admission manifests: %w", err)
		}
		doc := bytes.TrimSpace(buf[:n])
		if len(doc) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return out, fmt.Errorf("parse embedded admission manifest: %w", err)
		}
		sum := sha256.Sum256(doc)
		hash := hex.EncodeToString(sum[:8])
		switch tm.Kind {
		case "ValidatingAdmissionPolicy":
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict(doc, p); err != nil {
				return out, fmt.Errorf("parse ValidatingAdmissionPolicy: %w", err)
			}
			metav1.SetMetaDataAnnotation(&p.ObjectMeta, AnnotationManifestHash, hash)
			out.Policies = append(out.Policies, p)
		case "ValidatingAdmissionPolicyBinding":
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			if err := yaml.UnmarshalStrict(doc, b); err != nil {
				return out, fmt.Errorf("parse ValidatingAdmissionPolicyBinding: %w", err)
			}
			metav1.SetMetaDataAnnotation(&b.ObjectMeta, AnnotationManifestHash, hash)
			out.Bindings = append(out.Bindings, b)
		default:
			return out, fmt.Errorf("embedded admission manifest of unexpected kind %q", tm.Kind)
		}
	}
	return out, nil
}

// Result names the objects Ensure wrote.
type Result struct {
	// Created and Updated name the objects created and rewritten.
	Created, Updated []string
}

// Ensure creates the missing admission policies and bindings and rewrites
// those whose manifest hash differs from this binary's; objects already up
// to date are not written. Policies are written before their bindings.
func Ensure(ctx context.Context, cfg *rest.Config) (Result, error) {
	var res Result
	want, err := Load()
	if err != nil {
		return res, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return res, fmt.Errorf("admission client: %w", err)
	}
	api := cs.AdmissionregistrationV1()
	for _, p := range want.Policies {
		r := api.ValidatingAdmissionPolicies()
		if err := ensure(ctx, &res, "ValidatingAdmissionPolicy", p, r.Get, r.Create, r.Update); err != nil {
			return res, err
		}
	}
	for _, b := range want.Bindings {
		r := api.ValidatingAdmissionPolicyBindings()
		if err := ensure(ctx, &res, "ValidatingAdmissionPolicyBinding", b, r.Get, r.Create, r.Update); err != nil {
			return res, err
		}
	}
	return res, nil
}

// object is an admission policy or binding.
type object interface {
	*admissionregistrationv1.ValidatingAdmissionPolicy | *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	metav1.Object
}

// ensure creates want, or rewrites the live object when its manifest hash
// differs (keeping the live resourceVersion, so that a concurrent writer
// is not overwritten blindly).
func ensure[T object](ctx context.Context, res *Result, kind string, want T,
	get func(context.Context, string, metav1.GetOptions) (T, error),
	create func(context.Context, T, metav1.CreateOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error),
) error {
	name := want.GetName()
	live, err := get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := create(ctx, want, metav1.CreateOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", kind, name, err)
		}
		res.Created = append(res.Created, kind+"/"+name)
		return nil
	case err != nil:
		return fmt.Errorf("read %s %s: %w", kind, name, err)
	case live.GetAnnotations()[AnnotationManifestHash] == want.GetAnnotations()[AnnotationManifestHash]:
		return nil
	}
	want.SetResourceVersion(live.GetResourceVersion())
	if _, err := update(ctx, want, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("update %s %s: %w", kind, name, err)
	}
	res.Updated = append(res.Updated, kind+"/"+name)
	return nil
}
