package member

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Claim is a control plane's claim on a member, recorded as annotations on
// the member's flotilla-system namespace: which control plane (the UID of
// the host's kube-system namespace) and under which MemberCluster name. A
// member has at most one claim, so that neither two control planes nor two
// MemberClusters of one control plane manage the same cluster.
type Claim struct {
	// ControlPlaneID identifies the control plane.
	ControlPlaneID string
	// Cluster is the MemberCluster's name.
	Cluster string
}

// ClaimAction is what a claim needs done to the member's namespace.
type ClaimAction int

// Claim actions.
const (
	// ClaimHeld: the namespace already records this claim; nothing to write.
	ClaimHeld ClaimAction = iota
	// ClaimCreate: there is no namespace; create it with the claim.
	ClaimCreate
	// ClaimAdd: the namespace exists unclaimed; add the claim to it.
	ClaimAdd
	// ClaimWait: the namespace is terminating; look again later.
	ClaimWait
	// ClaimRefused: the member is claimed by another control plane or by
	// this one under another name.
	ClaimRefused
)

// ClaimVerdict is the decision about a claim.
type ClaimVerdict struct {
	// Action is what to do.
	Action ClaimAction
	// OwnerID and OwnerName are the claim found (for ClaimRefused).
	OwnerID, OwnerName string
}

// SameControlPlane says whether a refused member is claimed by this control
// plane under another name.
func (v ClaimVerdict) SameControlPlane(c Claim) bool { return v.OwnerID == c.ControlPlaneID }

// Decide compares the claim with the member's flotilla-system namespace (nil
// when there is none).
func (c Claim) Decide(ns *corev1.Namespace) ClaimVerdict {
	if ns == nil {
		return ClaimVerdict{Action: ClaimCreate}
	}
	owner, name := ns.Annotations[v1alpha1.AnnotationControlPlaneID], ns.Annotations[v1alpha1.AnnotationClusterName]
	switch {
	case owner != "" && owner != c.ControlPlaneID, owner == c.ControlPlaneID && name != "" && name != c.Cluster:
		return ClaimVerdict{Action: ClaimRefused, OwnerID: owner, OwnerName: name}
	case ns.DeletionTimestamp != nil:
		return ClaimVerdict{Action: ClaimWait, OwnerID: owner, OwnerName: name}
	case owner == c.ControlPlaneID && name == c.Cluster:
		return ClaimVerdict{Action: ClaimHeld, OwnerID: owner, OwnerName: name}
	}
	return ClaimVerdict{Action: ClaimAdd}
}

// RefusalMessage explains a ClaimRefused verdict.
func (c Claim) RefusalMessage(v ClaimVerdict) string {
	if v.SameControlPlane(c) {
		return fmt.Sprintf("the member is already managed by this control plane as MemberCluster %q (annotation %s on its namespace %s); one cluster may have only one MemberCluster: delete this one or unjoin %s",
			v.OwnerName, v1alpha1.AnnotationClusterName, v1alpha1.SystemNamespace, v.OwnerName)
	}
	return fmt.Sprintf("the member is claimed by another Flotilla control plane (%s=%s on its namespace %s, as %q); unjoin it there first",
		v1alpha1.AnnotationControlPlaneID, v.OwnerID, v1alpha1.SystemNamespace, v.OwnerName)
}

// NewNamespace returns the member namespace to create for the claim; it is
// marked as created by Flotilla, so that unjoin deletes it.
func (c Claim) NewNamespace() *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.SystemNamespace}}
	c.mark(ns)
	ns.Annotations[v1alpha1.AnnotationCreated] = "true"
	return ns
}

// Mark returns a copy of an existing namespace carrying the claim.
func (c Claim) Mark(ns *corev1.Namespace) *corev1.Namespace {
	ns = ns.DeepCopy()
	c.mark(ns)
	return ns
}

func (c Claim) mark(ns *corev1.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	if ns.Annotations == nil {
		ns.Annotations = map[string]string{}
	}
	ns.Labels[v1alpha1.LabelManaged] = "true"
	ns.Annotations[v1alpha1.AnnotationControlPlaneID] = c.ControlPlaneID
	ns.Annotations[v1alpha1.AnnotationClusterName] = c.Cluster
}

// claimFieldManager is the field manager of the cluster controller's claim
// writes.
const claimFieldManager = "flotilla"

// verifyClaim reads the member's namespace and records the session's claim
// if the member is unclaimed. It returns a refusal message when the member
// belongs to someone else, and an error when the claim could not be read or
// written; neither when the claim is the session's. Writes are made at the
// resourceVersion read, so that of two claimants only one wins; the loser
// reads again and is refused.
func (s *Session) verifyClaim(ctx context.Context) (refusal string, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.ProbeTimeout)
	defer cancel()
	api := s.client.CoreV1().Namespaces()
	for attempt := 0; ; attempt++ {
		ns, err := api.Get(ctx, v1alpha1.SystemNamespace, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			ns = nil
		case err != nil:
			return "", fmt.Errorf("read namespace %s in the member to check its claim (the credentials need get, create and update on namespaces): %w", v1alpha1.SystemNamespace, err)
		}
		v := s.claim.Decide(ns)
		switch v.Action {
		case ClaimHeld:
			return "", nil
		case ClaimRefused:
			return s.claim.RefusalMessage(v), nil
		case ClaimWait:
			return "", fmt.Errorf("namespace %s in the member is terminating (an unjoin?); claiming the member once it is gone", v1alpha1.SystemNamespace)
		case ClaimCreate:
			_, err = api.Create(ctx, s.claim.NewNamespace(), metav1.CreateOptions{FieldManager: claimFieldManager})
		case ClaimAdd:
			_, err = api.Update(ctx, s.claim.Mark(ns), metav1.UpdateOptions{FieldManager: claimFieldManager})
		}
		if err == nil {
			s.logger.Info("Claimed the member", "namespace", v1alpha1.SystemNamespace, "controlPlaneID", s.claim.ControlPlaneID, "created", v.Action == ClaimCreate)
			return "", nil
		}
		if (apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err)) && attempt == 0 {
			continue // written by someone else meanwhile: decide again on what they wrote
		}
		return "", fmt.Errorf("record the claim on namespace %s in the member (the credentials need get, create and update on namespaces): %w", v1alpha1.SystemNamespace, err)
	}
}

// claimObservation checks the claim after a healthy probe and returns the
// observation to record: the probe's own once the claim is the session's
// (from then on the session may be used), otherwise a not-ready one saying
// why the member may not be used. A refusal or failure is logged once per
// distinct message.
func (s *Session) claimObservation(ctx context.Context, probed Observation) Observation {
	refusal, err := s.verifyClaim(ctx)
	if refusal == "" && err == nil {
		s.lastClaimErr = ""
		s.usable.Store(true)
		return probed
	}
	o := Observation{Health: NotReady, Reason: ReasonClaimedElsewhere, Message: refusal, At: probed.At}
	if err != nil {
		o.Reason, o.Message = ReasonClaimFailed, err.Error()
	}
	if o.Message != s.lastClaimErr {
		s.lastClaimErr = o.Message
		s.logger.Info("Member not used: its claim is not this MemberCluster's", "reason", o.Reason, "message", o.Message)
	}
	return o
}
