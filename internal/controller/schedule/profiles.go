package schedule

import (
	"context"
	"crypto/tls"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins/webhook"
)

// profileCache holds built profiles by name, with the version (resource
// versions of the profile and its webhooks) they were built from.
type profileCache struct {
	mu sync.Mutex
	m  map[string]cachedProfile
}

type cachedProfile struct {
	version string
	profile *framework.Profile
	// validPending: writing the profile's Valid condition failed; the next
	// use writes it again.
	validPending bool
}

// webhookPrefix starts the plugin name of a SchedulerPluginWebhook.
const webhookPrefix = "webhook/"

// profile returns the profile a policy names ("" for the default) and a
// version that changes whenever the profile or a webhook it uses changes.
func (r *Reconciler) profile(ctx context.Context, name string) (*framework.Profile, string, error) {
	var sp *v1alpha1.SchedulingProfile
	version := "default"
	if name != "" {
		sp = &v1alpha1.SchedulingProfile{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, sp); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, "", fmt.Errorf("SchedulingProfile %s not found", name)
			}
			return nil, "", err
		}
		// Generations, not resourceVersions: status and metadata writes
		// (the Valid condition written below) do not change a decision.
		version = fmt.Sprintf("%s@%s/%d", name, sp.UID, sp.Generation)
		hooks, err := r.webhooksOf(ctx, &sp.Spec)
		if err != nil {
			return nil, "", err
		}
		for _, h := range hooks {
			version += fmt.Sprintf("|%s@%s/%d", h.Name, h.UID, h.Generation)
			if h.Spec.TLS != nil && h.Spec.TLS.ClientCertSecretRef != nil {
				s := &corev1.Secret{}
				if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.CredentialsNamespace, Name: h.Spec.TLS.ClientCertSecretRef.Name}, s); err == nil {
					version += "/secret@" + s.ResourceVersion // a rotated certificate rebuilds the plugin
				}
			}
		}
	}
	r.profiles.mu.Lock()
	if r.profiles.m == nil {
		r.profiles.m = map[string]cachedProfile{}
	}
	c, ok := r.profiles.m[name]
	r.profiles.mu.Unlock()
	if ok && c.version == version {
		if c.validPending && sp != nil {
			r.recordValid(ctx, name, version, sp, nil)
		}
		return c.profile, version, nil
	}
	var spec *v1alpha1.SchedulingProfileSpec
	if sp != nil {
		spec = &sp.Spec
	}
	p, err := framework.Build(name, spec, plugins.Registry(), plugins.Defaults(), func(n string) (framework.Plugin, error) {
		return r.webhookPlugin(ctx, n)
	})
	if err != nil && name != "" {
		err = fmt.Errorf("SchedulingProfile %s: %w", name, err)
	}
	if err == nil { // a failed build is tried again next time (a Secret may appear)
		r.profiles.mu.Lock()
		old := r.profiles.m[name]
		r.profiles.m[name] = cachedProfile{version: version, profile: p}
		r.profiles.mu.Unlock()
		if old.profile != nil && old.profile != p {
			old.profile.Close()
		}
	}
	if sp != nil {
		r.recordValid(ctx, name, version, sp, err)
	}
	return p, version, err
}

// recordValid writes a profile's Valid condition for its build result
// (buildErr). A failed write is logged and, for a cached profile, made
// again on its next use; a failed build is built (and written) again
// anyway.
func (r *Reconciler) recordValid(ctx context.Context, name, version string, sp *v1alpha1.SchedulingProfile, buildErr error) {
	err := r.setProfileValid(ctx, sp, buildErr)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Writing the Valid condition of a SchedulingProfile; retrying on its next use", "schedulingProfile", name)
	}
	r.profiles.mu.Lock()
	defer r.profiles.mu.Unlock()
	if c, ok := r.profiles.m[name]; ok && c.version == version {
		c.validPending = err != nil
		r.profiles.m[name] = c
	}
}

// webhooksOf returns the SchedulerPluginWebhooks a profile enables, by
// name; missing ones are left for Build to report.
func (r *Reconciler) webhooksOf(ctx context.Context, spec *v1alpha1.SchedulingProfileSpec) ([]v1alpha1.SchedulerPluginWebhook, error) {
	names := map[string]bool{}
	for _, set := range []v1alpha1.PluginSet{spec.Plugins.Filter, spec.Plugins.Score, spec.Plugins.Select, spec.Plugins.Replicas} {
		for _, e := range set.Enabled {
			if n, ok := strings.CutPrefix(e.Name, webhookPrefix); ok {
				names[n] = true
			}
		}
	}
	var out []v1alpha1.SchedulerPluginWebhook
	for n := range names {
		h := v1alpha1.SchedulerPluginWebhook{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: n}, &h); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// webhookPlugin builds the plugin of "webhook/<name>".
func (r *Reconciler) webhookPlugin(ctx context.Context, plugin string) (framework.Plugin, error) {
	name, ok := strings.CutPrefix(plugin, webhookPrefix)
	if !ok {
		return nil, fmt.Errorf("unknown plugin %q (in-tree plugins: %s; webhooks: %s<SchedulerPluginWebhook name>)", plugin, strings.Join(plugins.Names(), ", "), webhookPrefix)
	}
	h := &v1alpha1.SchedulerPluginWebhook{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, h); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("SchedulerPluginWebhook %s not found", name)
		}
		return nil, err
	}
	var cert *tls.Certificate
	if h.Spec.TLS != nil && h.Spec.TLS.ClientCertSecretRef != nil {
		s := &corev1.Secret{}
		key := client.ObjectKey{Namespace: r.CredentialsNamespace, Name: h.Spec.TLS.ClientCertSecretRef.Name}
		if err := r.Client.Get(ctx, key, s); err != nil {
			return nil, fmt.Errorf("client certificate of webhook %s: Secret %s: %w", name, key, err)
		}
		c, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			return nil, fmt.Errorf("client certificate of webhook %s: Secret %s: %w", name, key, err)
		}
		cert = &c
	}
	return webhook.New(name, h.Spec, cert)
}

// setProfileValid records in a profile's status whether it builds.
func (r *Reconciler) setProfileValid(ctx context.Context, sp *v1alpha1.SchedulingProfile, err error) error {
	cond := metav1.Condition{Type: "Valid", Status: metav1.ConditionTrue, Reason: "Valid", Message: "the plugins build", ObservedGeneration: sp.Generation}
	if err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Invalid", err.Error()
	}
	sp = sp.DeepCopy()
	if !meta.SetStatusCondition(&sp.Status.Conditions, cond) {
		return nil
	}
	if err := r.Client.Status().Update(ctx, sp); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("update the status of SchedulingProfile %s: %w", sp.Name, err)
	}
	return nil
}
