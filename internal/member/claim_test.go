package member

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestClaimDecide(t *testing.T) {
	c := Claim{ControlPlaneID: "cp-1", Cluster: "east"}
	ns := func(annotations map[string]string, terminating bool) *corev1.Namespace {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.SystemNamespace, Annotations: annotations}}
		if terminating {
			now := metav1.Now()
			n.DeletionTimestamp = &now
		}
		return n
	}
	claimed := func(id, name string) map[string]string {
		return map[string]string{v1alpha1.AnnotationControlPlaneID: id, v1alpha1.AnnotationClusterName: name}
	}
	tests := []struct {
		name      string
		ns        *corev1.Namespace
		want      ClaimAction
		sameCP    bool
		wantOwner string
	}{
		{name: "no namespace", ns: nil, want: ClaimCreate},
		{name: "namespace without a claim", ns: ns(nil, false), want: ClaimAdd},
		{name: "namespace with other annotations", ns: ns(map[string]string{"team": "x"}, false), want: ClaimAdd},
		{name: "ours", ns: ns(claimed("cp-1", "east"), false), want: ClaimHeld},
		{name: "ours, name missing", ns: ns(map[string]string{v1alpha1.AnnotationControlPlaneID: "cp-1"}, false), want: ClaimAdd},
		{name: "another control plane", ns: ns(claimed("cp-2", "east"), false), want: ClaimRefused, wantOwner: "east"},
		{name: "this control plane, another name", ns: ns(claimed("cp-1", "west"), false), want: ClaimRefused, sameCP: true, wantOwner: "west"},
		{name: "terminating, unclaimed", ns: ns(nil, true), want: ClaimWait},
		{name: "terminating, ours", ns: ns(claimed("cp-1", "east"), true), want: ClaimWait},
		{name: "terminating, another's", ns: ns(claimed("cp-2", "x"), true), want: ClaimRefused, wantOwner: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := c.Decide(tt.ns)
			if v.Action != tt.want {
				t.Fatalf("Decide() = %+v, want action %d", v, tt.want)
			}
			if v.Action != ClaimRefused {
				return
			}
			if v.SameControlPlane(c) != tt.sameCP || v.OwnerName != tt.wantOwner {
				t.Errorf("Decide() = %+v, want owner %q, same control plane %v", v, tt.wantOwner, tt.sameCP)
			}
			msg := c.RefusalMessage(v)
			want := "another Flotilla control plane"
			if tt.sameCP {
				want = `this control plane as MemberCluster "` + tt.wantOwner + `"`
			}
			if !strings.Contains(msg, want) {
				t.Errorf("RefusalMessage() = %q, want it to contain %q", msg, want)
			}
		})
	}
}

func TestClaimNamespaces(t *testing.T) {
	c := Claim{ControlPlaneID: "cp-1", Cluster: "east"}
	created := c.NewNamespace()
	if got := c.Decide(created); got.Action != ClaimHeld {
		t.Errorf("Decide(NewNamespace()) = %+v, want held", got)
	}
	if created.Annotations[v1alpha1.AnnotationCreated] != "true" || created.Labels[v1alpha1.LabelManaged] != "true" {
		t.Errorf("NewNamespace() = %+v, want marked as created and managed", created.ObjectMeta)
	}
	before := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.SystemNamespace, ResourceVersion: "7", Annotations: map[string]string{"team": "x"}}}
	marked := c.Mark(before)
	if got := c.Decide(marked); got.Action != ClaimHeld {
		t.Errorf("Decide(Mark()) = %+v, want held", got)
	}
	if _, ok := marked.Annotations[v1alpha1.AnnotationCreated]; ok {
		t.Errorf("Mark() marked an existing namespace as created by Flotilla: %v", marked.Annotations)
	}
	if marked.Annotations["team"] != "x" || marked.ResourceVersion != "7" {
		t.Errorf("Mark() lost the namespace's own metadata: %+v", marked.ObjectMeta)
	}
	if len(before.Annotations) != 1 {
		t.Errorf("Mark() changed its argument: %v", before.Annotations)
	}
}

func TestPoolHidesUnusableSessions(t *testing.T) {
	p := NewPool()
	verified, pending := &Session{Name: "verified"}, &Session{Name: "pending"}
	verified.usable.Store(true)
	p.m["verified"], p.m["pending"] = verified, pending
	if got := p.Get("pending"); got != nil {
		t.Errorf("Get(pending) = %v, want nil until the claim is verified", got)
	}
	if got := p.Get("verified"); got != verified {
		t.Errorf("Get(verified) = %v, want the session", got)
	}
	if got := p.Names(); len(got) != 1 || got[0] != "verified" {
		t.Errorf("Names() = %v, want [verified]", got)
	}
	if got := p.Current("pending"); got != pending {
		t.Errorf("Current(pending) = %v, want the session", got)
	}
}

func TestVerifyClaim(t *testing.T) {
	c := Claim{ControlPlaneID: "cp-1", Cluster: "east"}
	existing := func(annotations map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.SystemNamespace, Annotations: annotations}}
	}
	tests := []struct {
		name        string
		objects     []runtime.Object
		conflict    bool // the first write fails with a conflict and someone else's claim appears
		wantRefusal string
		wantErr     bool
		wantWrites  []string // verbs
		wantCreated bool
	}{
		{name: "no namespace: created with the claim", wantWrites: []string{"create"}, wantCreated: true},
		{name: "unclaimed namespace: claim added", objects: []runtime.Object{existing(map[string]string{"team": "x"})}, wantWrites: []string{"update"}},
		{name: "already ours: nothing written", objects: []runtime.Object{existing(map[string]string{v1alpha1.AnnotationControlPlaneID: "cp-1", v1alpha1.AnnotationClusterName: "east"})}},
		{name: "another control plane's: refused, nothing written", objects: []runtime.Object{existing(map[string]string{v1alpha1.AnnotationControlPlaneID: "cp-2", v1alpha1.AnnotationClusterName: "x"})},
			wantRefusal: "another Flotilla control plane"},
		{name: "lost a race: decided again on the winner's claim", objects: []runtime.Object{existing(nil)}, conflict: true,
			wantWrites: []string{"update"}, wantRefusal: `as MemberCluster "west"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.objects...)
			if tt.conflict {
				cs.PrependReactor("update", "namespaces", func(action k8stesting.Action) (bool, runtime.Object, error) {
					// The other claimant's write lands first.
					ns := existing(map[string]string{v1alpha1.AnnotationControlPlaneID: "cp-1", v1alpha1.AnnotationClusterName: "west"})
					if err := cs.Tracker().Update(corev1.SchemeGroupVersion.WithResource("namespaces"), ns, ""); err != nil {
						return true, nil, err
					}
					return true, nil, apierrors.NewConflict(corev1.Resource("namespaces"), v1alpha1.SystemNamespace, errors.New("changed"))
				})
			}
			s := &Session{client: cs, claim: &c, opts: DefaultOptions(), logger: klog.Background()}
			refusal, err := s.verifyClaim(context.Background())
			if (err != nil) != tt.wantErr {
				t.Fatalf("verifyClaim() error = %v, want error %v", err, tt.wantErr)
			}
			if !strings.Contains(refusal, tt.wantRefusal) || (tt.wantRefusal == "") != (refusal == "") {
				t.Fatalf("verifyClaim() refusal = %q, want %q", refusal, tt.wantRefusal)
			}
			var writes []string
			for _, a := range cs.Actions() {
				if a.GetVerb() != "get" {
					writes = append(writes, a.GetVerb())
				}
			}
			if strings.Join(writes, ",") != strings.Join(tt.wantWrites, ",") {
				t.Errorf("writes %v, want %v", writes, tt.wantWrites)
			}
			if refusal != "" {
				return
			}
			ns, err := cs.CoreV1().Namespaces().Get(context.Background(), v1alpha1.SystemNamespace, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Decide(ns); got.Action != ClaimHeld {
				t.Errorf("after verifyClaim the namespace is %v, want our claim", ns.Annotations)
			}
			if created := ns.Annotations[v1alpha1.AnnotationCreated] == "true"; created != tt.wantCreated {
				t.Errorf("namespace marked created = %v, want %v", created, tt.wantCreated)
			}
		})
	}
}
