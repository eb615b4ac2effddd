package rolloutctl

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Target is a resolved workload argument.
type Target struct {
	// Kind is the workload's group, version and kind.
	Kind schema.GroupVersionKind
	// Namespaced is false for a cluster-scoped custom kind.
	Namespaced bool
	// Name is the workload's name.
	Name string
}

// Resolve reads a workload argument as kubectl does: NAME (a Deployment)
// or KIND/NAME, where KIND is a resource name, singular or plural, a
// short name, or any of these with its group (deploy/web, sts/db,
// clonesets.apps.kruise.io/web). It refuses kinds a federated rollout
// never governs (core kinds, and apps kinds other than Deployments and
// StatefulSets); whether a custom kind's interpreter has a rollout rule
// is for its FederatedObject to say.
func Resolve(mapper meta.RESTMapper, arg string) (Target, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		return Target{Kind: appsv1.SchemeGroupVersion.WithKind("Deployment"), Namespaced: true, Name: arg}, nil
	}
	if kind == "" || name == "" || strings.Contains(name, "/") {
		return Target{}, fmt.Errorf("%q: want NAME or KIND/NAME", arg)
	}
	gvr, gr := schema.ParseResourceArg(strings.ToLower(kind))
	var gvk schema.GroupVersionKind
	var err error
	if gvr != nil {
		gvk, err = mapper.KindFor(*gvr)
	}
	if gvr == nil || err != nil {
		gvk, err = mapper.KindFor(gr.WithVersion(""))
	}
	if meta.IsNoMatchError(err) {
		return Target{}, fmt.Errorf("%s: the host serves no such kind", kind)
	}
	if err != nil {
		return Target{}, fmt.Errorf("%s: discover the host's kinds: %w", kind, err)
	}
	switch {
	case gvk.Group == appsv1.GroupName && (gvk.Kind == "Deployment" || gvk.Kind == "StatefulSet"):
	case gvk.Group == "" || gvk.Group == appsv1.GroupName:
		return Target{}, fmt.Errorf("%s: a %s has no federated rollout (Deployments, StatefulSets and custom kinds whose WorkloadInterpreter has a rollout rule have)", arg, gvk.Kind)
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return Target{}, fmt.Errorf("%s: discover the host's kinds: %w", kind, err)
	}
	return Target{Kind: gvk, Namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace, Name: name}, nil
}
