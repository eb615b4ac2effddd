package manager

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/templates"
)

// Secrets are templates only on demand: the template cache watches them
// while a propagation policy selects kind Secret or a FederatedObject
// propagates a Secret (selected, or following a workload that references
// it). Reading them anywhere but in the credentials namespace needs the
// optional ClusterRole flotilla-controller-manager-secrets
// (config/rbac/optional.yaml); without it the cache logs that they are
// needed and does not watch them.

// watchSecretsOnDemand makes Secrets an on-demand kind of tc, asked about
// at every discovery, and asks for a discovery as soon as a policy or
// FederatedObject needs Secrets while they are not watched.
func watchSecretsOnDemand(ctx context.Context, mgr ctrl.Manager, tc *templates.Cache) error {
	reader := mgr.GetClient()
	tc.OnDemand(templates.SecretKind, func(ctx context.Context) (bool, string, error) {
		return secretsWanted(ctx, reader)
	})
	kick := func(obj any) {
		if o, ok := obj.(client.Object); ok && needsSecrets(o) != "" && !tc.Watching(templates.SecretKind) {
			tc.Rediscover()
		}
	}
	for _, obj := range []client.Object{&v1alpha1.PropagationPolicy{}, &v1alpha1.ClusterPropagationPolicy{}, &v1alpha1.FederatedObject{}} {
		inf, err := mgr.GetCache().GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("informer for %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    kick,
			UpdateFunc: func(_, obj any) { kick(obj) },
		}); err != nil {
			return fmt.Errorf("watch %T for Secrets: %w", obj, err)
		}
	}
	return nil
}

// secretsWanted reports whether any policy or FederatedObject needs
// Secrets, and which (or that none does).
func secretsWanted(ctx context.Context, reader client.Reader) (bool, string, error) {
	lists := []client.ObjectList{&v1alpha1.PropagationPolicyList{}, &v1alpha1.ClusterPropagationPolicyList{}, &v1alpha1.FederatedObjectList{}}
	for _, list := range lists {
		// Read-only: the cached objects are shared, not copied (every
		// FederatedObject is looked at).
		if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return false, "", fmt.Errorf("list %T: %w", list, err)
		}
		var why string
		switch l := list.(type) {
		case *v1alpha1.PropagationPolicyList:
			for i := range l.Items {
				if why = needsSecrets(&l.Items[i]); why != "" {
					break
				}
			}
		case *v1alpha1.ClusterPropagationPolicyList:
			for i := range l.Items {
				if why = needsSecrets(&l.Items[i]); why != "" {
					break
				}
			}
		case *v1alpha1.FederatedObjectList:
			for i := range l.Items {
				if why = needsSecrets(&l.Items[i]); why != "" {
					break
				}
			}
		}
		if why != "" {
			return true, why, nil
		}
	}
	return false, "no policy selects Secrets and no propagated workload references one", nil
}

// needsSecrets says why obj (a policy or a FederatedObject) needs Secrets
// watched, or "".
func needsSecrets(obj client.Object) string {
	var selectors []v1alpha1.ResourceSelector
	var what string
	switch o := obj.(type) {
	case *v1alpha1.PropagationPolicy:
		selectors, what = o.Spec.ResourceSelectors, "PropagationPolicy "+o.Namespace+"/"+o.Name
	case *v1alpha1.ClusterPropagationPolicy:
		selectors, what = o.Spec.ResourceSelectors, "ClusterPropagationPolicy "+o.Name
	case *v1alpha1.FederatedObject:
		if o.Spec.Template.APIVersion == "v1" && o.Spec.Template.Kind == templates.SecretKind.Kind {
			return fmt.Sprintf("FederatedObject %s/%s propagates a Secret", o.Namespace, o.Name)
		}
		for _, f := range o.Spec.Followers {
			if f.Kind == templates.SecretKind.Kind {
				return fmt.Sprintf("FederatedObject %s/%s references Secret %s", o.Namespace, o.Name, f.Name)
			}
		}
		return ""
	}
	for _, s := range selectors {
		if s.APIVersion == "v1" && s.Kind == templates.SecretKind.Kind {
			return what + " selects Secrets"
		}
	}
	return ""
}
