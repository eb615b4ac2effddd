// Package admission embeds the admission policies Flotilla installs into
// the host control plane (ValidatingAdmissionPolicies and their bindings:
// deletion protection, scale-down protection, and the guard that lets
// only hub admins accept a pull member) and installs them. Like the CRDs,
// they are written only when missing or different from this binary's, so
// that a restart writes nothing.
package admission

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
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

//go:embed deletion-protection.yaml accept-guard.yaml scale-down-protection.yaml
var manifests embed.FS

// Set is one embedded manifest: a policy and its binding.
type Set string

// The embedded sets.
const (
	// DeletionProtection refuses to delete objects annotated
	// flotilla.io/deletion-protection: "true".
	DeletionProtection Set = "deletion-protection.yaml"
	// AcceptGuard lets only users allowed to update memberclusters/accept
	// change a MemberCluster's spec.accepted.
	AcceptGuard Set = "accept-guard.yaml"
	// ScaleDownProtection refuses a replicas change that removes more
	// than flotilla.io/scale-down-limit percent of a workload's replicas
	// at once, unless flotilla.io/scale-down-to names the target.
	ScaleDownProtection Set = "scale-down-protection.yaml"
)

// AllSets are all embedded sets.
var AllSets = []Set{AcceptGuard, DeletionProtection, ScaleDownProtection}

// ScaleDownProtectionName names the ValidatingAdmissionPolicy (and its
// binding) of ScaleDownProtection.
const ScaleDownProtectionName = "flotilla.io-scale-down-protection"

// AcceptGuardName names the ValidatingAdmissionPolicy (and its binding) of
// AcceptGuard.
const AcceptGuardName = "flotilla.io-accept-guard"

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

// Load parses the embedded manifests of sets (all when none is named) and
// stamps each object with the hash of its manifest.
func Load(sets ...Set) (Policies, error) {
	if len(sets) == 0 {
		sets = AllSets
	}
	var out Policies
	for _, set := range sets {
		data, err := manifests.ReadFile(string(set))
		if err != nil {
			return out, fmt.Errorf("read embedded admission manifest %s: %w", set, err)
		}
		if err := load(&out, data); err != nil {
			return out, fmt.Errorf("%s: %w", set, err)
		}
	}
	return out, nil
}

// load appends the objects of one manifest file to out.
func load(out *Policies, data []byte) error {
	dec := utilyaml.NewDocumentDecoder(io.NopCloser(bytes.NewReader(data)))
	defer dec.Close()
	buf := make([]byte, len(data))
	for {
		n, err := dec.Read(buf)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read embedded admission manifests: %w", err)
		}
		doc := bytes.TrimSpace(buf[:n])
		if len(doc) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return fmt.Errorf("parse embedded admission manifest: %w", err)
		}
		sum := sha256.Sum256(doc)
		hash := hex.EncodeToString(sum[:8])
		switch tm.Kind {
		case "ValidatingAdmissionPolicy":
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict(doc, p); err != nil {
				return fmt.Errorf("parse ValidatingAdmissionPolicy: %w", err)
			}
			metav1.SetMetaDataAnnotation(&p.ObjectMeta, AnnotationManifestHash, hash)
			out.Policies = append(out.Policies, p)
		case "ValidatingAdmissionPolicyBinding":
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			if err := yaml.UnmarshalStrict(doc, b); err != nil {
				return fmt.Errorf("parse ValidatingAdmissionPolicyBinding: %w", err)
			}
			metav1.SetMetaDataAnnotation(&b.ObjectMeta, AnnotationManifestHash, hash)
			out.Bindings = append(out.Bindings, b)
		default:
			return fmt.Errorf("embedded admission manifest of unexpected kind %q", tm.Kind)
		}
	}
}

// Result names the objects Ensure wrote.
type Result struct {
	// Created and Updated name the objects created and rewritten.
	Created, Updated []string
}

// Ensure creates the missing admission policies of sets (all when none is
// named) and their bindings, and rewrites
// those whose manifest hash differs from this binary's; objects already up
// to date are not written. Policies are written before their bindings.
func Ensure(ctx context.Context, cfg *rest.Config, sets ...Set) (Result, error) {
	var res Result
	want, err := Load(sets...)
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
