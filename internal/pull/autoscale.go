package pull

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/autoscale"
	"github.com/flotilla-io/flotilla/internal/member"
)

// UsageStaleAfter is how old an agent's usage report may be before the
// hub stops trusting it (the agent reports every AgentUsageInterval).
const UsageStaleAfter = 4 * AgentUsageInterval

// AgentUsageInterval is how often an agent reports the usage of the
// workloads federated HPAs scale.
const AgentUsageInterval = 15 * time.Second

// autoscaleIdle is how long an intent keeps spec.autoscale after the
// last time the hub asked for its usage: then the hub stops the agent's
// reports (its HPA is gone).
const autoscaleIdle = 5 * time.Minute

// PodUsage returns the usage of the workload's pods that the member's
// agent last reported. The first call asks the agent to report (the
// intent's spec.autoscale); until it has, and when its report is stale
// or failed, it is an error.
func (s *Session) PodUsage(ctx context.Context, w member.Workload) (map[corev1.ResourceName]autoscale.Usage, error) {
	st, err := s.autoscaleReport(ctx, w, nil)
	if err != nil {
		return nil, err
	}
	if st.Error != "" {
		return nil, fmt.Errorf("the agent reports: %s", st.Error)
	}
	out := make(map[corev1.ResourceName]autoscale.Usage, len(st.Usage))
	for _, u := range st.Usage {
		out[corev1.ResourceName(u.Resource)] = autoscale.Usage{Ready: u.Ready, Unready: u.Unready, Missing: u.Missing, Used: u.Used}
	}
	return out, nil
}

// Autoscalers returns the member HPAs of the workload that its agent last
// reported (asking for reports as PodUsage does).
func (s *Session) Autoscalers(ctx context.Context, w member.Workload) ([]v1alpha1.MemberAutoscaler, error) {
	st, err := s.autoscaleReport(ctx, w, nil)
	if err != nil {
		return nil, err
	}
	return st.Autoscalers, nil
}

// RemoveAutoscalers asks the agent to delete the named member HPAs of the
// workload (spec.autoscale.remove); Autoscalers shows when it has.
func (s *Session) RemoveAutoscalers(ctx context.Context, w member.Workload, names []string) error {
	_, err := s.autoscaleReport(ctx, w, names)
	if err == member.ErrNoMetrics {
		return nil // asked; the agent's next report shows the outcome
	}
	return err
}

// autoscaleReport returns the agent's fresh report on the workload's
// intent, first making sure the intent asks for reports and for the
// removal of remove (names the report no longer lists are dropped from
// the request: the agent deleted them, and a later HPA of the same name
// is not deleted without a new take-over). member.ErrNoMetrics: asked,
// not reported yet.
func (s *Session) autoscaleReport(ctx context.Context, w member.Workload, remove []string) (*v1alpha1.IntentAutoscaleStatus, error) {
	cur, synced := s.lookup(w.GVR.GroupResource(), w.Namespace, w.Name)
	switch {
	case !synced:
		return nil, member.ErrCacheSyncing
	case cur == nil || cur.deleting():
		return nil, fmt.Errorf("%s %s/%s has no intent in the member", w.Kind, w.Namespace, w.Name)
	}
	name := cur.u.GetName()
	now := time.Now()
	st := cur.autoscaleStatus()
	s.mu.Lock()
	s.asked[name] = now
	seen := s.reports[name]
	if st != nil && !seen.stamp.Equal(&st.Time) {
		// Freshness by the hub's clock: when the report last changed here.
		seen = reportSeen{stamp: st.Time, at: now}
		s.reports[name] = seen
	}
	s.mu.Unlock()
	have := cur.autoscale()
	want := &v1alpha1.IntentAutoscale{}
	if have != nil && st != nil {
		for _, n := range have.Remove {
			if listed(st.Autoscalers, n) {
				want.Remove = append(want.Remove, n) // not deleted yet
			}
		}
	} else if have != nil {
		want.Remove = slices.Clone(have.Remove)
	}
	for _, n := range remove {
		if !slices.Contains(want.Remove, n) {
			want.Remove = append(want.Remove, n)
		}
	}
	slices.Sort(want.Remove)
	if have == nil || !slices.Equal(have.Remove, want.Remove) {
		if err := s.patchAutoscale(ctx, cur, want); err != nil {
			return nil, err
		}
		if have == nil {
			return nil, member.ErrNoMetrics
		}
	}
	if st == nil {
		return nil, member.ErrNoMetrics
	}
	if age := now.Sub(seen.at); age > UsageStaleAfter {
		return nil, fmt.Errorf("the agent's report has not changed for %s", age.Round(time.Second))
	}
	return st, nil
}

// reportSeen is when the hub saw an agent's report (its stamp) first.
type reportSeen struct {
	stamp metav1.Time
	at    time.Time
}

// listed reports whether the agent's report lists the HPA name.
func listed(hpas []v1alpha1.MemberAutoscaler, name string) bool {
	for _, h := range hpas {
		if h.Name == name {
			return true
		}
	}
	return false
}

// patchAutoscale sets (or, with nil, clears) the intent's spec.autoscale.
func (s *Session) patchAutoscale(ctx context.Context, cur *intent, want *v1alpha1.IntentAutoscale) error {
	body, err := autoscalePatch(want)
	if err != nil {
		return err
	}
	ci := &v1alpha1.ClusterIntent{}
	ci.Namespace, ci.Name = s.namespace, cur.u.GetName()
	if err := s.cfg.Client.Patch(ctx, ci, client.RawPatch(types.MergePatchType, body)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("ask the agent of %s for usage (intent %s): %w", s.cfg.Cluster, ci.Name, err)
	}
	return nil
}

// autoscalePatch is the merge patch that sets spec.autoscale to want (nil
// clears it). An empty list of HPAs to remove is said outright: the
// encoding omits it, and a merge patch without it would leave the names
// the agent already deleted, so that a later member HPA of one of those
// names would be deleted too, and every report would patch again.
func autoscalePatch(want *v1alpha1.IntentAutoscale) ([]byte, error) {
	var autoscale any = want
	if want != nil && len(want.Remove) == 0 {
		autoscale = map[string]any{"remove": nil}
	}
	return json.Marshal(map[string]any{"spec": map[string]any{"autoscale": autoscale}})
}

// idleAutoscale stops the reports nobody asked for in autoscaleIdle (the
// federated HPA is gone, or no longer federated).
func (s *Session) idleAutoscale(ctx context.Context, now time.Time) {
	if !s.intents.HasSynced() || now.Sub(s.started) < autoscaleIdle {
		return
	}
	for _, obj := range s.intents.GetStore().List() {
		i := &intent{obj.(*unstructured.Unstructured)}
		if i.autoscale() == nil || i.deleting() {
			continue
		}
		s.mu.Lock()
		last := s.asked[i.u.GetName()]
		s.mu.Unlock()
		if now.Sub(last) < autoscaleIdle {
			continue
		}
		if err := s.patchAutoscale(ctx, i, nil); err != nil {
			s.logger.Error(err, "Stopping the agent's usage reports")
			continue
		}
		s.forgetAutoscale(i.u)
	}
}

// autoscale is spec.autoscale (nil when unset).
func (i intent) autoscale() *v1alpha1.IntentAutoscale {
	raw, found, _ := unstructured.NestedMap(i.u.Object, "spec", "autoscale")
	if !found {
		return nil
	}
	out := &v1alpha1.IntentAutoscale{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, out); err != nil {
		return nil
	}
	return out
}

// autoscaleStatus is status.autoscale (nil when unset).
func (i intent) autoscaleStatus() *v1alpha1.IntentAutoscaleStatus {
	raw, found, _ := unstructured.NestedMap(i.u.Object, "status", "autoscale")
	if !found {
		return nil
	}
	out := &v1alpha1.IntentAutoscaleStatus{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, out); err != nil {
		return nil
	}
	return out
}

// autoscaleOnly reports whether an intent's update changed nothing but
// the agent's usage report, which concerns the autoscale controller (it
// reads it when it evaluates), not propagation or status.
func autoscaleOnly(old, cur intent) bool {
	if old.u.GetGeneration() != cur.u.GetGeneration() || !old.u.GetDeletionTimestamp().Equal(cur.u.GetDeletionTimestamp()) {
		return false
	}
	os, _ := old.u.Object["status"].(map[string]any)
	cs, _ := cur.u.Object["status"].(map[string]any)
	if equality.Semantic.DeepEqual(os["autoscale"], cs["autoscale"]) {
		return false
	}
	for k, v := range cs {
		if k != "autoscale" && !equality.Semantic.DeepEqual(os[k], v) {
			return false
		}
	}
	for k := range os {
		if _, ok := cs[k]; !ok && k != "autoscale" {
			return false
		}
	}
	return true
}

// forgetAutoscale drops what the session remembers of an intent's usage
// reports (the intent is gone, or its reports were switched off).
func (s *Session) forgetAutoscale(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.asked, u.GetName())
	delete(s.reports, u.GetName())
}
