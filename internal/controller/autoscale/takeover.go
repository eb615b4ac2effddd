package autoscale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controller/fedobj"
	"github.com/flotilla-io/flotilla/internal/controller/schedule"
	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/policy"
	"github.com/flotilla-io/flotilla/internal/render"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// Reasons of a take-over, on the AbleToScale condition.
const (
	// ReasonMemberAutoscalers: member HPAs scale the target too, and the
	// federated HPA may not take them over.
	ReasonMemberAutoscalers = "MemberAutoscalers"
	// ReasonReplicasRetained: the target keeps its members' replicas
	// (flotilla.io/retain-replicas), and the federated HPA may not take
	// them over.
	ReasonReplicasRetained = "ReplicasRetained"
	// ReasonTakingOver: a take-over is under way.
	ReasonTakingOver = "TakingOver"
)

// takeOverRetry is how soon a take-over in progress is looked at again.
const takeOverRetry = 2 * time.Second

// awaitReports is how long a federated HPA waits for pull members' first
// reports of their HPAs before it scales.
const awaitReports = time.Minute

// blocker says why a federated HPA does not scale yet.
type blocker struct {
	reason, message string
	warn            bool // a Warning event (the user must act), not a step
	slow            bool // waits for what may take long (a member away)
}

// takenOver is one member HPA a federated HPA took over.
type takenOver struct {
	Cluster string `json:"cluster"`
	v1alpha1.MemberAutoscaler
}

// takeOver hands a target's replicas from its members to the federated
// HPA, without changing them: the members' own HPAs of the target are
// deleted (their bounds recorded in the annotation flotilla.io/taken-over)
// and, when the members kept their replicas (flotilla.io/retain-replicas),
// the host's replicas become their sum, the scheduler's placement their
// counts, and only then is the annotation removed, so that propagation
// writes what the members already run. It needs the HPA's consent
// (flotilla.io/conflict-resolution: adopt, honoured as for the target's
// adoption) and returns a blocker while anything is left to do.
func (r *Reconciler) takeOver(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, tmpl *unstructured.Unstructured, fo *v1alpha1.FederatedObject) (*blocker, error) {
	consent, hint, err := r.consent(ctx, hpa, fo)
	if err != nil {
		return nil, err
	}
	placement := fo.Placement()
	found := map[string][]string{} // cluster -> unmanaged member HPAs
	var record []takenOver
	var unknown, managed, awaiting []string
	works := map[string]member.Workload{}
	for _, p := range placement {
		sess, err := r.reachable(p.Cluster)
		if err != nil {
			unknown = append(unknown, fmt.Sprintf("%s: %v", p.Cluster, err))
			continue
		}
		w, err := workloadOf(sess, tmpl)
		if err == nil {
			works[p.Cluster] = w
			if live, state := sess.ManagedObject(w.GVR, w.Namespace, w.Name); live == nil || state != member.CacheSynced || !dispatch.Written(live) {
				// The member's object is not Flotilla's (a conflict: one
				// that only carries the managed label is not), or not
				// known yet: its HPAs are none of the federation's
				// business.
				unknown = append(unknown, p.Cluster+": no managed copy of the target")
				continue
			}
			var hpas []v1alpha1.MemberAutoscaler
			mctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
			hpas, err = sess.Autoscalers(mctx, w)
			cancel()
			if errors.Is(err, member.ErrNoMetrics) {
				awaiting = append(awaiting, p.Cluster)
				continue
			} else if err == nil {
				for _, h := range hpas {
					if h.Managed {
						managed = append(managed, fmt.Sprintf("%s in %s", h.Name, p.Cluster))
						continue
					}
					found[p.Cluster] = append(found[p.Cluster], h.Name)
					record = append(record, takenOver{Cluster: p.Cluster, MemberAutoscaler: h})
				}
				continue
			}
		}
		unknown = append(unknown, fmt.Sprintf("%s: %v", p.Cluster, err))
	}
	if len(managed) > 0 {
		return &blocker{reason: ReasonMemberAutoscalers, warn: true, message: fmt.Sprintf("HPA %s also scales %s %s: a policy propagates it to run in the members; take it out of the policy (a federated HPA and member HPAs would fight over the replicas)",
			strings.Join(managed, ", "), tmpl.GetKind(), tmpl.GetName())}, nil
	}
	if len(awaiting) > 0 && len(record) == 0 && r.awaited(hpa) < awaitReports {
		// A pull member's agent was just asked: its HPAs are known within
		// its report period (an agent that never reports, an older
		// version, holds a federated HPA back no longer than awaitReports).
		// The wait counts from the first time it waited, not from the
		// HPA's creation: an old HPA that a policy propagated until now
		// (whose copies run in the members) waits as a new one does.
		return &blocker{reason: ReasonTakingOver, message: "waiting for the agents of " + strings.Join(awaiting, ", ") + " to report their HPAs"}, nil
	}
	if len(record) > 0 {
		if !consent {
			return &blocker{reason: ReasonMemberAutoscalers, warn: true, message: fmt.Sprintf("member HPAs also scale %s %s (%s): set the annotation %s: adopt on this HPA to take them over (they are deleted and their bounds recorded in %s), or delete them%s",
				tmpl.GetKind(), tmpl.GetName(), describe(record), v1alpha1.AnnotationConflictResolution, v1alpha1.AnnotationTakenOver, hint)}, nil
		}
		recorded, err := r.recordTakenOver(ctx, hpa, record)
		if apierrors.IsConflict(err) {
			return &blocker{reason: ReasonTakingOver, message: "recording the member HPAs " + describe(record)}, nil
		}
		if err != nil {
			return nil, err
		}
		var errs []error
		for cluster, names := range found {
			sess := r.Pool.Get(cluster)
			if sess == nil {
				errs = append(errs, fmt.Errorf("%s: not connected", cluster))
				continue
			}
			mctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
			err := sess.RemoveAutoscalers(mctx, works[cluster], names)
			cancel()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", cluster, err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("take over the member HPAs of %s %s: %w", tmpl.GetKind(), tmpl.GetName(), err)
		}
		if recorded {
			r.event(hpa, corev1.EventTypeNormal, "TakenOver", fmt.Sprintf("taking over the member HPAs %s (deleted; a pull member's by its agent); bounds together: min %d, max %d; this HPA: min %d, max %d",
				describe(record), sumBounds(record, true), sumBounds(record, false), policyOf(hpa).Min, hpa.Spec.MaxReplicas))
		}
		return &blocker{reason: ReasonTakingOver, slow: true, message: "deleting the member HPAs " + describe(record)}, nil
	}
	if !render.RetainsReplicas(tmpl) {
		return nil, nil
	}
	if !consent {
		return &blocker{reason: ReasonReplicasRetained, warn: true, message: fmt.Sprintf("%s %s keeps its members' replicas (%s: \"true\"), so its host replicas do not reach them: set the annotation %s: adopt on this HPA to take the replicas over as the members run them, or remove %s from the target%s",
			tmpl.GetKind(), tmpl.GetName(), v1alpha1.AnnotationRetainReplicas, v1alpha1.AnnotationConflictResolution, v1alpha1.AnnotationRetainReplicas, hint)}, nil
	}
	for _, c := range awaiting {
		unknown = append(unknown, c+": its agent has not reported its HPAs")
	}
	if len(unknown) > 0 {
		return &blocker{reason: ReasonTakingOver, slow: true, message: "waiting to see every member's HPAs before taking the replicas over: " + strings.Join(unknown, "; ")}, nil
	}
	return r.takeReplicas(ctx, tmpl, fo, works)
}

// takeReplicas makes the placement and then the host's replicas what the
// members run, then drops flotilla.io/retain-replicas from the target.
// The placement comes first: the scheduler decides again only when the
// host's replicas change, and then, with the members' counts in force and
// their sum as the total, keeps them (no cluster gains or loses a copy).
func (r *Reconciler) takeReplicas(ctx context.Context, tmpl *unstructured.Unstructured, fo *v1alpha1.FederatedObject, works map[string]member.Workload) (*blocker, error) {
	counts := map[string]int32{}
	var sum int32
	for _, p := range fo.Placement() {
		if p.OrdinalStart != nil {
			return &blocker{reason: ReasonReplicasRetained, warn: true, message: fmt.Sprintf("%s %s is divided with ordinal ranges, which a change of its counts would renumber: remove %s from it to let the federation set its replicas, or give it %s: per-member",
				tmpl.GetKind(), tmpl.GetName(), v1alpha1.AnnotationRetainReplicas, v1alpha1.AnnotationOrdinals)}, nil
		}
		sess := r.Pool.Get(p.Cluster)
		if sess == nil {
			return &blocker{reason: ReasonTakingOver, slow: true, message: fmt.Sprintf("waiting for %s to connect", p.Cluster)}, nil
		}
		live, state := sess.ManagedObject(works[p.Cluster].GVR, tmpl.GetNamespace(), tmpl.GetName())
		n, ok := int32(0), false
		if live != nil && state == member.CacheSynced {
			n, ok = workload.Replicas(live)
		}
		if !ok {
			return &blocker{reason: ReasonTakingOver, slow: true, message: fmt.Sprintf("waiting for the replicas of the copy in %s", p.Cluster)}, nil
		}
		counts[p.Cluster] = n
		sum += n
	}
	seeded := false
	for _, p := range fo.Placement() {
		if ptr.Deref(p.Replicas, -1) != counts[p.Cluster] {
			if err := schedule.Seed(ctx, r.Client, fo, counts); apierrors.IsConflict(err) {
				return &blocker{reason: ReasonTakingOver, message: "recording the members' replicas as the placement: " + describeCounts(counts)}, nil
			} else if err != nil {
				return nil, fmt.Errorf("record the members' replicas (%s) as the placement of %s %s: %w", describeCounts(counts), tmpl.GetKind(), tmpl.GetName(), err)
			}
			seeded = true
			break
		}
	}
	// The host's total right after the seed, in the same pass: the
	// scheduler's next decision then sees both together (a decision in
	// between, for another reason, would start from the counts towards
	// the old total).
	if host, _ := workload.Replicas(tmpl); host != sum {
		if err := r.scale(ctx, tmpl, sum); apierrors.IsConflict(err) {
			return &blocker{reason: ReasonTakingOver, message: fmt.Sprintf("setting the host's replicas to %d, what the members run (%s): the target changed meanwhile; trying again", sum, describeCounts(counts))}, nil
		} else if err != nil {
			return nil, err
		}
		return &blocker{reason: ReasonTakingOver, message: fmt.Sprintf("setting the host's replicas to %d, what the members run (%s)", sum, describeCounts(counts))}, nil
	}
	if seeded {
		return &blocker{reason: ReasonTakingOver, message: "recorded the members' replicas as the placement: " + describeCounts(counts)}, nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, v1alpha1.AnnotationRetainReplicas)
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(tmpl.GroupVersionKind())
	obj.SetNamespace(tmpl.GetNamespace())
	obj.SetName(tmpl.GetName())
	if err := r.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return nil, fmt.Errorf("remove %s from %s %s: %w", v1alpha1.AnnotationRetainReplicas, tmpl.GetKind(), tmpl.GetName(), err)
	}
	return &blocker{reason: ReasonTakingOver, message: fmt.Sprintf("took the replicas over as the members run them (%s)", describeCounts(counts))}, nil
}

// consent reports whether the HPA may take over what its target's
// members run: its annotation flotilla.io/conflict-resolution: adopt,
// honoured as it would be on the target (policy.Adopt), or the target's
// policy saying conflictResolution: Adopt. hint says what would allow it.
func (r *Reconciler) consent(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, fo *v1alpha1.FederatedObject) (bool, string, error) {
	if fo.Spec.Policy == nil {
		return false, "", nil
	}
	spec, err := fedobj.PolicySpec(ctx, r.Client, *fo.Spec.Policy)
	if err != nil {
		return false, "", fmt.Errorf("read the policy of %s/%s: %w", fo.Namespace, fo.Name, err)
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(hpa)
	if err != nil {
		return false, "", err
	}
	own := policy.Chosen{Ref: *fo.Spec.Policy, Spec: spec}
	a := policy.Adopt(&unstructured.Unstructured{Object: raw}, nil, []policy.Chosen{own})
	if a.Adopt || (spec != nil && spec.ConflictResolution == v1alpha1.ConflictAdopt && !strings.EqualFold(strings.TrimSpace(hpa.Annotations[v1alpha1.AnnotationConflictResolution]), "abort")) {
		return true, "", nil
	}
	if policy.WantsAdopt(&unstructured.Unstructured{Object: raw}) {
		return false, " (" + a.Hint + ")", nil
	}
	return false, "", nil
}

// recordTakenOver adds member HPAs to the HPA's flotilla.io/taken-over
// annotation; it reports whether that changed it.
func (r *Reconciler) recordTakenOver(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, add []takenOver) (bool, error) {
	var all []takenOver
	if v := hpa.Annotations[v1alpha1.AnnotationTakenOver]; v != "" {
		_ = json.Unmarshal([]byte(v), &all) // a mangled record is replaced
	}
	for _, t := range add {
		i := slices.IndexFunc(all, func(o takenOver) bool { return o.Cluster == t.Cluster && o.Name == t.Name })
		if i >= 0 {
			all[i] = t
		} else {
			all = append(all, t)
		}
	}
	slices.SortFunc(all, func(a, b takenOver) int { return strings.Compare(a.Cluster+"/"+a.Name, b.Cluster+"/"+b.Name) })
	value, err := json.Marshal(all)
	if err != nil {
		return false, err
	}
	if hpa.Annotations[v1alpha1.AnnotationTakenOver] == string(value) {
		return false, nil
	}
	// Conditional on the HPA read: a record written meanwhile is not lost.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": hpa.ResourceVersion,
		"annotations": map[string]string{v1alpha1.AnnotationTakenOver: string(value)}}})
	if err != nil {
		return false, err
	}
	if err := r.Client.Patch(ctx, hpa.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		return false, fmt.Errorf("record the member HPAs HPA %s/%s takes over: %w", hpa.Namespace, hpa.Name, err)
	}
	return true, nil
}

func describe(ts []takenOver) string {
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s in %s (min %d, max %d)", t.Name, t.Cluster, t.MinReplicas, t.MaxReplicas))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func sumBounds(ts []takenOver, minimum bool) int32 {
	var n int32
	for _, t := range ts {
		if minimum {
			n += t.MinReplicas
		} else {
			n += t.MaxReplicas
		}
	}
	return n
}

func describeCounts(counts map[string]int32) string {
	parts := make([]string, 0, len(counts))
	for c, n := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", c, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
