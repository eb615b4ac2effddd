// Package rbac embeds the controller-manager's host permissions: the
// generated ClusterRole and Role (role.yaml, from the +kubebuilder:rbac
// markers in internal/), its ServiceAccount and bindings
// (role_binding.yaml), the optional grants (optional.yaml), the pull
// agents' namespace role (agent.yaml) and the gateway's identity
// (gateway.yaml), and applies
// them to a host, for `flotilla up` and the tests.
package rbac

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

//go:embed role.yaml role_binding.yaml optional.yaml legacy-finalizer.yaml agent.yaml gateway.yaml
var manifests embed.FS

// The controller-manager's identity on the host.
const (
	// Namespace holds the ServiceAccount (and the credentials Secrets).
	Namespace = v1alpha1.SystemNamespace
	// ServiceAccount is the controller-manager's ServiceAccount.
	ServiceAccount = "flotilla-controller-manager"
	// Username is the ServiceAccount's user name, as the host authenticates
	// it.
	Username = "system:serviceaccount:" + Namespace + ":" + ServiceAccount
	// SecretsClusterRole is the optional ClusterRole that lets the
	// controller-manager read Secrets in every namespace, to propagate
	// them.
	SecretsClusterRole = "flotilla-controller-manager-secrets"
	// LegacyFinalizerClusterRole is the ClusterRole (and binding) of
	// LegacyFinalizerFile.
	LegacyFinalizerClusterRole = "flotilla-controller-manager-legacy-finalizer"
)

// Groups are the groups of Username, as for any ServiceAccount of
// Namespace.
var Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + Namespace}

// FieldManager is the field manager of Apply's writes.
const FieldManager = "flotilla-rbac"

// Files of the embedded manifests.
const (
	// RoleFile holds the generated ClusterRole and Role.
	RoleFile = "role.yaml"
	// BindingFile holds the ServiceAccount and the bindings to RoleFile's
	// roles.
	BindingFile = "role_binding.yaml"
	// OptionalFile holds the grants that are off by default (Secrets).
	OptionalFile = "optional.yaml"
	// LegacyFinalizerFile holds the grant a host upgraded from a version
	// that put a finalizer on templates needs for the upgrade only (patch
	// of the template kinds, to remove it); nothing applies it.
	LegacyFinalizerFile = "legacy-finalizer.yaml"
	// AgentFile holds the ClusterRole AgentClusterRole.
	AgentFile = "agent.yaml"
	// GatewayFile holds the gateway's ServiceAccount GatewayServiceAccount,
	// its ClusterRole (impersonation, TokenReviews and
	// SubjectAccessReviews) and binding.
	GatewayFile = "gateway.yaml"
)

// GatewayServiceAccount is the gateway's ServiceAccount in Namespace.
const GatewayServiceAccount = "flotilla-gateway"

// AgentClusterRole is what a pull member's agent may do in its cluster's
// hub namespace (bound there by a RoleBinding, never cluster-wide).
const AgentClusterRole = "flotilla-agent"

// AgentCertificatesClusterRole lets a pull member's bootstrap identity and
// its agent ask for the agent's certificate (create a
// CertificateSigningRequest, and get it back by name) and nothing else;
// join binds it per cluster.
const AgentCertificatesClusterRole = "flotilla-agent-certificates"

// AgentUser is the user name of a pull member's agent on the hub (the
// subject of its client certificate).
func AgentUser(cluster string) string { return v1alpha1.AgentUserPrefix + cluster }

// Objects returns the objects of an embedded manifest file.
func Objects(file string) ([]*unstructured.Unstructured, error) {
	b, err := manifests.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read embedded %s: %w", file, err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("parse embedded %s: %w", file, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// resources maps the kinds of the manifests to their resources.
var resources = map[schema.GroupVersionKind]string{
	{Version: "v1", Kind: "ServiceAccount"}:                                         "serviceaccounts",
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}:        "clusterroles",
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}:               "roles",
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}: "clusterrolebindings",
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}:        "rolebindings",
}

// Apply server-side applies the objects of the given embedded files
// (RoleFile and BindingFile for the controller-manager's default
// permissions; OptionalFile too to grant Secrets) to the host at cfg, an
// identity that may grant them (an admin). Namespace must exist.
func Apply(ctx context.Context, cfg *rest.Config, files ...string) error {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("RBAC client: %w", err)
	}
	for _, file := range files {
		objs, err := Objects(file)
		if err != nil {
			return err
		}
		for _, o := range objs {
			gvk := o.GroupVersionKind()
			res, ok := resources[gvk]
			if !ok {
				return fmt.Errorf("%s: unexpected kind %s", file, gvk)
			}
			data, err := o.MarshalJSON()
			if err != nil {
				return fmt.Errorf("encode %s %s: %w", gvk.Kind, o.GetName(), err)
			}
			ri := client.Resource(gvk.GroupVersion().WithResource(res))
			force := true
			opts := metav1.PatchOptions{FieldManager: FieldManager, Force: &force}
			if o.GetNamespace() != "" {
				_, err = ri.Namespace(o.GetNamespace()).Patch(ctx, o.GetName(), types.ApplyPatchType, data, opts)
			} else {
				_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, opts)
			}
			if err != nil {
				return fmt.Errorf("apply %s %s: %w", gvk.Kind, o.GetName(), err)
			}
		}
	}
	return nil
}
