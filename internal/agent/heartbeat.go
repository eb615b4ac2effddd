package agent

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/pull"
)

// heartbeat renews the agent's Lease on the hub with the member's health,
// and writes the member's version, served kinds and capacity into the
// MemberCluster's status when they change.
type heartbeat struct {
	hub      client.Client
	cluster  string
	identity string
	pool     *member.Pool
	kick     chan struct{}
	interval time.Duration

	last     *v1alpha1.MemberClusterStatus // the last report written
	lastErr  string
	renewErr string
}

// Start runs until ctx ends (a manager Runnable that needs the leader
// lease: only the working agent renews).
func (h *heartbeat) Start(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("heartbeat")
	for {
		if sess := h.pool.Get(h.cluster); sess != nil {
			h.beat(ctx, logger, sess.Snapshot())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-h.kick:
		case <-time.After(h.interval):
		}
	}
}

// beat renews the Lease and reports what changed; failures are logged
// once per distinct error and retried at the next beat.
func (h *heartbeat) beat(ctx context.Context, logger klog.Logger, snap member.Snapshot) {
	if !snap.HealthKnown {
		return
	}
	err := h.renew(ctx, snap.Health)
	if msg := errString(err); msg != h.renewErr {
		h.renewErr = msg
		if err != nil {
			logger.Error(err, "Cannot renew the heartbeat Lease on the hub; retrying", "namespace", v1alpha1.ClusterNamespace(h.cluster))
		} else {
			logger.Info("Heartbeat renewed", "namespace", v1alpha1.ClusterNamespace(h.cluster))
		}
	}
	if snap.Version == "" || snap.APIResources == nil || !snap.SummaryKnown {
		return
	}
	st := &v1alpha1.MemberClusterStatus{
		KubernetesVersion: snap.Version, APIResources: snap.APIResources,
		NodeCount: snap.Summary.Nodes, SchedulableNodeCount: snap.Summary.SchedulableNodes,
		Resources: v1alpha1.ResourceSummary{Allocatable: snap.Summary.Allocatable, Available: snap.Summary.Available},
	}
	if h.last != nil && equality.Semantic.DeepEqual(h.last, st) {
		return
	}
	err = h.writeReport(ctx, st)
	if msg := errString(err); msg != h.lastErr {
		h.lastErr = msg
		if err != nil {
			logger.Error(err, "Cannot report the member's state to the hub; retrying")
		}
	}
	if err == nil {
		h.last = st
	}
}

// renew creates or renews the Lease, carrying the member's health.
func (h *heartbeat) renew(ctx context.Context, health member.Observation) error {
	ns := v1alpha1.ClusterNamespace(h.cluster)
	lease := &coordinationv1.Lease{}
	err := h.hub.Get(ctx, types.NamespacedName{Namespace: ns, Name: v1alpha1.AgentLeaseName}, lease)
	create := apierrors.IsNotFound(err)
	if err != nil && !create {
		return err
	}
	lease.Namespace, lease.Name = ns, v1alpha1.AgentLeaseName
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[v1alpha1.AnnotationAgentHealth] = string(health.Health)
	lease.Annotations[v1alpha1.AnnotationAgentHealthReason] = health.Reason
	lease.Annotations[v1alpha1.AnnotationAgentHealthMessage] = health.Message
	lease.Spec.HolderIdentity = ptr.To(h.identity)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(pull.HeartbeatStale / time.Second))
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if create {
		return h.hub.Create(ctx, lease)
	}
	return h.hub.Update(ctx, lease)
}

// writeReport applies the agent's fields of the MemberCluster's status.
func (h *heartbeat) writeReport(ctx context.Context, st *v1alpha1.MemberClusterStatus) error {
	fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
	if err != nil {
		return err
	}
	for _, k := range []string{"conditions", "scheduling", "observedGeneration"} {
		delete(fields, k)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": fields}}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("MemberCluster"))
	u.SetName(h.cluster)
	return h.hub.Status().Patch(ctx, u, client.Apply, client.FieldOwner(v1alpha1.FieldManagerAgent), client.ForceOwnership)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
