package cluster

import (
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/agentcert"
)

// clusterOfRequest maps an agent certificate request to the MemberCluster
// it asks for, so that the Accepted condition follows it.
func clusterOfRequest(_ context.Context, o client.Object) []reconcile.Request {
	csr, ok := o.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return nil
	}
	name, ok := agentcert.ClusterOf(csr)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
}

// renderAccepted sets the Accepted condition of a pull member (and
// removes it from a push member). Only a member not accepted looks at the
// certificate requests: it reports the newest one, so that the admin who
// accepts it knows which agent asked.
func (r *Reconciler) renderAccepted(ctx context.Context, st *v1alpha1.MemberClusterStatus, mc *v1alpha1.MemberCluster, now time.Time) error {
	if mc.Spec.SyncMode != v1alpha1.SyncModePull {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionAccepted)
		return nil
	}
	c := metav1.Condition{Type: v1alpha1.ConditionAccepted, ObservedGeneration: mc.Generation, LastTransitionTime: metav1.NewTime(now)}
	if mc.Spec.Accepted {
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonAccepted
		c.Message = "accepted by a hub admin: the agent's certificate requests are signed (signer " + v1alpha1.SignerAgent + ")"
		if !r.SignerConfigured {
			c.Message = "accepted by a hub admin, but this controller-manager signs no agent certificates (start it with --agent-signing-cert-file and --agent-signing-key-file): the agent's requests stay unsigned"
		}
		meta.SetStatusCondition(&st.Conditions, c)
		return nil
	}
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := r.Client.List(ctx, list); err != nil {
		return fmt.Errorf("list certificate signing requests: %w", err)
	}
	newest := newestRequest(list.Items, mc.Name)
	c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonAwaitingAgent
	c.Message = "no agent has asked to join yet: run `flotilla agent --cluster " + mc.Name + " --bootstrap-kubeconfig FILE` in the member with the file `flotilla join --mode pull` wrote"
	if newest != nil {
		c.Reason, c.Message = acceptanceState(newest, mc.Name)
	}
	meta.SetStatusCondition(&st.Conditions, c)
	return nil
}

// newestRequest returns the newest agent certificate request for cluster
// sent by its bootstrap credential or its agent (another member's requests
// naming it, and an earlier member's agent's, are denied without showing
// here).
func newestRequest(csrs []certificatesv1.CertificateSigningRequest, cluster string) *certificatesv1.CertificateSigningRequest {
	var newest *certificatesv1.CertificateSigningRequest
	for i := range csrs {
		c := &csrs[i]
		if name, ok := agentcert.ClusterOf(c); !ok || name != cluster {
			continue
		}
		if u := c.Spec.Username; u != agentcert.BootstrapUser(cluster) && u != v1alpha1.AgentUserPrefix+cluster || earlierMembers(c) {
			continue
		}
		if newest == nil || newest.CreationTimestamp.Before(&c.CreationTimestamp) ||
			(newest.CreationTimestamp.Equal(&c.CreationTimestamp) && newest.Name < c.Name) {
			newest = c
		}
	}
	return newest
}

// earlierMembers reports whether csr was denied as a renewal by the agent
// of an earlier MemberCluster of the name: not this member's agent asking.
func earlierMembers(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateDenied && c.Reason == agentcert.ReasonEarlierMember {
			return true
		}
	}
	return false
}

// acceptanceState is the reason and message of the Accepted condition of
// a member not accepted whose newest certificate request is csr.
func acceptanceState(csr *certificatesv1.CertificateSigningRequest, cluster string) (string, string) {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
			return v1alpha1.ReasonCSRDenied, fmt.Sprintf("certificate signing request %s from %s was denied (%s: %s); the agent retries with a new request",
				csr.Name, csr.Spec.Username, c.Reason, c.Message)
		}
	}
	return v1alpha1.ReasonPendingAcceptance, fmt.Sprintf("certificate signing request %s from %s (created %s) asks for the agent certificate of %s; check it, then accept the member: `flotilla accept %s`",
		csr.Name, csr.Spec.Username, csr.CreationTimestamp.UTC().Format(time.RFC3339), v1alpha1.AgentUserPrefix+cluster, cluster)
}
