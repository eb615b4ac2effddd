package member

import (
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// Reasons for refusing to connect to a member, used as condition and event
// reasons.
const (
	// ReasonCredentialsNotBound: the Secret is not bound to the
	// MemberCluster (see CheckBinding).
	ReasonCredentialsNotBound = "CredentialsNotBound"
	// ReasonInsecureEndpoint: the endpoint is plain http or skips TLS
	// verification and insecure members are not allowed.
	ReasonInsecureEndpoint = "InsecureEndpoint"
	// ReasonClaimedElsewhere: the member is claimed by another control
	// plane, or by this one under another name.
	ReasonClaimedElsewhere = "ClaimedElsewhere"
	// ReasonClaimFailed: the member's claim could not be read or written.
	ReasonClaimFailed = "ClaimFailed"
)

// CheckBinding reports whether secret may be used for mc: it must be bound
// to mc, by an owner reference to mc's UID (what `flotilla join` writes) or
// by the label flotilla.io/member-cluster naming mc, and bound to no other
// MemberCluster (an owner reference to another UID or the label naming
// another). Without this rule whoever may edit MemberClusters could point one
// at another member's Secret and an endpoint of their own.
func CheckBinding(mc *v1alpha1.MemberCluster, secret *corev1.Secret) error {
	where := secret.Namespace + "/" + secret.Name
	owned := false
	for _, ref := range secret.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != v1alpha1.GroupVersion.Group || ref.Kind != "MemberCluster" {
			continue
		}
		if ref.UID != mc.UID {
			return fmt.Errorf("Secret %s is owned by MemberCluster %s (uid %s), not by this MemberCluster %s (uid %s): each MemberCluster needs a Secret of its own", where, ref.Name, ref.UID, mc.Name, mc.UID)
		}
		owned = true
	}
	label, labelled := secret.Labels[v1alpha1.LabelMemberCluster]
	if labelled && label != mc.Name {
		return fmt.Errorf("Secret %s is bound to MemberCluster %s (label %s=%s), not to %s: each MemberCluster needs a Secret of its own", where, label, v1alpha1.LabelMemberCluster, label, mc.Name)
	}
	if owned || labelled {
		return nil
	}
	return fmt.Errorf("Secret %s is not bound to MemberCluster %s: label it %s=%s (flotilla join does this for you)", where, mc.Name, v1alpha1.LabelMemberCluster, mc.Name)
}

// Insecurities lists what makes mc's connection insecure: a plain http
// endpoint (the credentials travel in clear text) and
// tls.insecureSkipVerify (anyone on the path can pose as the member and
// receive the credentials). Empty means secure.
func Insecurities(mc *v1alpha1.MemberCluster) []string {
	var out []string
	if u, err := url.Parse(mc.Spec.APIEndpoint); err == nil && strings.EqualFold(u.Scheme, "http") {
		out = append(out, fmt.Sprintf("apiEndpoint %s is plain http (the credentials travel unencrypted)", mc.Spec.APIEndpoint))
	}
	if mc.Spec.TLS != nil && mc.Spec.TLS.InsecureSkipVerify {
		out = append(out, "tls.insecureSkipVerify is set (the member's serving certificate is not verified)")
	}
	return out
}
