package join

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
)

// TokenRoleName is the Role in the member's flotilla-system namespace that
// lets a restricted join's ServiceAccount renew its own token (the full
// ClusterRole grants that already).
const TokenRoleName = "flotilla:controller-token"

// memberHealthURLs are the non-resource URLs the control plane reads:
// health probes and discovery.
var memberHealthURLs = []string{"/readyz", "/livez", "/healthz", "/version", "/api", "/api/*", "/apis", "/apis/*"}

// ParseKinds splits --restrict-kinds values ("deployments.apps,configmaps")
// into group resources, rejecting empty entries, subresources and
// duplicates.
func ParseKinds(values []string) ([]schema.GroupResource, error) {
	var out []schema.GroupResource
	seen := map[schema.GroupResource]bool{}
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			switch {
			case s == "":
				continue
			case strings.ContainsAny(s, "/*: "):
				return nil, fmt.Errorf("invalid kind %q: give a resource, optionally with its group (deployments.apps, configmaps, clonesets.apps.kruise.io)", s)
			}
			gr := schema.ParseGroupResource(s)
			if gr.Resource == "" {
				return nil, fmt.Errorf("invalid kind %q: no resource", s)
			}
			if !seen[gr] {
				seen[gr] = true
				out = append(out, gr)
			}
		}
	}
	return out, nil
}

// ResolveKinds maps each requested kind to the resource the member serves
// (a kind, singular or short name is turned into the plural resource as
// kubectl does). A fully qualified resource.group the member does not serve
// yet (a CRD installed later) is kept as given; an unqualified name the
// member does not know is an error. warnings lists what was kept
// unresolved.
func ResolveKinds(mapper meta.RESTMapper, kinds []schema.GroupResource) (resolved []schema.GroupResource, warnings []string, err error) {
	seen := map[schema.GroupResource]bool{}
	for _, gr := range kinds {
		gvr, rerr := mapper.ResourceFor(gr.WithVersion(""))
		got := gvr.GroupResource()
		switch {
		case rerr == nil:
		case meta.IsNoMatchError(rerr) && gr.Group != "":
			got = gr
			warnings = append(warnings, fmt.Sprintf("the member does not serve %s yet: granted as given", gr))
		case meta.IsNoMatchError(rerr):
			return nil, nil, fmt.Errorf("the member serves no resource %q: give it as resource.group (for example deployments.apps)", gr.Resource)
		default:
			return nil, nil, fmt.Errorf("look up %s in the member: %w", gr, rerr)
		}
		if !seen[got] {
			seen[got] = true
			resolved = append(resolved, got)
		}
	}
	sort.Slice(resolved, func(i, j int) bool {
		if resolved[i].Group != resolved[j].Group {
			return resolved[i].Group < resolved[j].Group
		}
		return resolved[i].Resource < resolved[j].Resource
	})
	return resolved, warnings, nil
}

// resolveInMember resolves o.RestrictKinds against the member's discovery
// and says on o.Out what the control plane will be allowed to write.
func resolveInMember(cs kubernetes.Interface, o Options) ([]schema.GroupResource, error) {
	groups, err := restmapper.GetAPIGroupResources(cs.Discovery())
	if err != nil && len(groups) == 0 {
		return nil, fmt.Errorf("discover the member's resources to resolve --restrict-kinds: %w", err)
	}
	kinds, warnings, err := ResolveKinds(restmapper.NewDiscoveryRESTMapper(groups), o.RestrictKinds)
	if err != nil {
		return nil, fmt.Errorf("--restrict-kinds: %w", err)
	}
	for _, w := range warnings {
		fmt.Fprintf(o.Out, "warning: %s\n", w)
	}
	names := make([]string, len(kinds))
	for i, gr := range kinds {
		names[i] = gr.String()
	}
	fmt.Fprintf(o.Out, "Restricted join: the control plane may write only %s in the member\n", strings.Join(names, ", "))
	return kinds, nil
}

// fullRules are the default join's ClusterRole rules: every verb on every
// resource, plus the health and discovery URLs.
func fullRules() []*rbacv1ac.PolicyRuleApplyConfiguration {
	return []*rbacv1ac.PolicyRuleApplyConfiguration{
		rbacv1ac.PolicyRule().WithAPIGroups("*").WithResources("*").WithVerbs("*"),
		rbacv1ac.PolicyRule().WithNonResourceURLs(memberHealthURLs...).WithVerbs("get"),
	}
}

// restrictedRules are a restricted join's ClusterRole rules: what health,
// discovery, capacity and the claim need, namespaces to create for copies,
// and the verbs propagation needs on the listed kinds only.
func restrictedRules(kinds []schema.GroupResource) []*rbacv1ac.PolicyRuleApplyConfiguration {
	rules := []*rbacv1ac.PolicyRuleApplyConfiguration{
		rbacv1ac.PolicyRule().WithNonResourceURLs(memberHealthURLs...).WithVerbs("get"),
		// Capacity (node and pod caches) and unschedulable pods.
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("nodes", "pods").WithVerbs("get", "list", "watch"),
		// Namespaces are created on demand for the copies in them (an
		// existing one is left as it is). Never deleted.
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("namespaces").WithVerbs("get", "list", "watch", "create"),
		// The claim on the control plane's own namespace.
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("namespaces").WithResourceNames(v1alpha1.SystemNamespace).WithVerbs("update", "patch"),
		// What it may write (discovery marks the rest read-only).
		rbacv1ac.PolicyRule().WithAPIGroups("authorization.k8s.io").WithResources("selfsubjectrulesreviews").WithVerbs("create"),
	}
	byGroup := map[string][]string{}
	var groups []string
	for _, gr := range kinds {
		if _, ok := byGroup[gr.Group]; !ok {
			groups = append(groups, gr.Group)
		}
		byGroup[gr.Group] = append(byGroup[gr.Group], gr.Resource)
	}
	slices.Sort(groups)
	for _, g := range groups {
		rules = append(rules, rbacv1ac.PolicyRule().WithAPIGroups(g).WithResources(byGroup[g]...).WithVerbs(member.WriteVerbs...).WithVerbs("update"))
	}
	return rules
}

// applyTokenRole gives a restricted join's ServiceAccount the right to ask
// for its own token (so that the controller-manager can renew it): Role and
// RoleBinding TokenRoleName in flotilla-system, owned by the ClusterRole so
// that unjoin removes them with it. A full join grants that already, so
// rejoining without restrictions deletes them.
func applyTokenRole(ctx context.Context, cs kubernetes.Interface, owner *metav1ac.OwnerReferenceApplyConfiguration, restricted bool) error {
	roles, bindings := cs.RbacV1().Roles(v1alpha1.SystemNamespace), cs.RbacV1().RoleBindings(v1alpha1.SystemNamespace)
	if !restricted {
		for _, del := range []func(context.Context, string, metav1.DeleteOptions) error{bindings.Delete, roles.Delete} {
			if err := del(ctx, TokenRoleName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete the restricted join's Role %s/%s in the member: %w", v1alpha1.SystemNamespace, TokenRoleName, err)
			}
		}
		return nil
	}
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	rule := rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("serviceaccounts/token").WithResourceNames(ServiceAccountName).WithVerbs("create")
	if _, err := roles.Apply(ctx, rbacv1ac.Role(TokenRoleName, v1alpha1.SystemNamespace).WithLabels(managed()).WithOwnerReferences(owner).WithRules(rule), opts); err != nil {
		return fmt.Errorf("create Role %s/%s in the member: %w", v1alpha1.SystemNamespace, TokenRoleName, err)
	}
	if _, err := bindings.Apply(ctx, rbacv1ac.RoleBinding(TokenRoleName, v1alpha1.SystemNamespace).WithLabels(managed()).WithOwnerReferences(owner).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("Role").WithName(TokenRoleName)).
		WithSubjects(rbacv1ac.Subject().WithKind("ServiceAccount").WithName(ServiceAccountName).WithNamespace(v1alpha1.SystemNamespace)), opts); err != nil {
		return fmt.Errorf("create RoleBinding %s/%s in the member: %w", v1alpha1.SystemNamespace, TokenRoleName, err)
	}
	return nil
}
