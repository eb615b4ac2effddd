package member

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

func TestCheckBinding(t *testing.T) {
	mc := &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "east", UID: "uid-east"}}
	owner := func(kind, apiVersion, name string, uid types.UID) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid}
	}
	ownedByEast := owner("MemberCluster", "flotilla.io/v1alpha1", "east", "uid-east")
	ownedByWest := owner("MemberCluster", "flotilla.io/v1alpha1", "west", "uid-west")
	tests := []struct {
		name    string
		labels  map[string]string
		owners  []metav1.OwnerReference
		wantErr string // "" when bound
	}{
		{name: "joined: owner reference and label", labels: map[string]string{v1alpha1.LabelMemberCluster: "east"}, owners: []metav1.OwnerReference{ownedByEast}},
		{name: "owner reference only", owners: []metav1.OwnerReference{ownedByEast}},
		{name: "label only (made by hand)", labels: map[string]string{v1alpha1.LabelMemberCluster: "east"}},
		{name: "not bound at all", wantErr: "not bound to MemberCluster east: label it flotilla.io/member-cluster=east"},
		{name: "another member's Secret (owner and label)", labels: map[string]string{v1alpha1.LabelMemberCluster: "west"}, owners: []metav1.OwnerReference{ownedByWest},
			wantErr: "owned by MemberCluster west"},
		{name: "another member's label", labels: map[string]string{v1alpha1.LabelMemberCluster: "west"}, wantErr: "bound to MemberCluster west"},
		{name: "own label but owned by another", labels: map[string]string{v1alpha1.LabelMemberCluster: "east"}, owners: []metav1.OwnerReference{ownedByWest},
			wantErr: "owned by MemberCluster west"},
		{name: "owned but labelled for another", labels: map[string]string{v1alpha1.LabelMemberCluster: "west"}, owners: []metav1.OwnerReference{ownedByEast},
			wantErr: "bound to MemberCluster west"},
		{name: "owned by an earlier MemberCluster of the same name", owners: []metav1.OwnerReference{owner("MemberCluster", "flotilla.io/v1alpha1", "east", "uid-old")},
			wantErr: "owned by MemberCluster east (uid uid-old)"},
		{name: "owners of other kinds do not bind", owners: []metav1.OwnerReference{owner("ConfigMap", "v1", "east", "uid-east"), owner("MemberCluster", "example.com/v1", "east", "uid-east")},
			wantErr: "not bound"},
		{name: "an empty label is another name", labels: map[string]string{v1alpha1.LabelMemberCluster: ""}, wantErr: "bound to MemberCluster "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-system", Name: "creds", Labels: tt.labels, OwnerReferences: tt.owners}}
			err := CheckBinding(mc, secret)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("CheckBinding() = %v, want bound", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("CheckBinding() = nil, want an error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("CheckBinding() = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestInsecurities(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		tls      *v1alpha1.TLSOptions
		want     []string // substrings, in order
	}{
		{name: "https", endpoint: "https://10.0.0.1:6443"},
		{name: "https with a server name", endpoint: "https://10.0.0.1:6443", tls: &v1alpha1.TLSOptions{ServerName: "east.internal"}},
		{name: "http", endpoint: "http://10.0.0.1:8080", want: []string{"plain http"}},
		{name: "HTTP in capitals", endpoint: "HTTP://10.0.0.1:8080", want: []string{"plain http"}},
		{name: "skip verify", endpoint: "https://10.0.0.1:6443", tls: &v1alpha1.TLSOptions{InsecureSkipVerify: true}, want: []string{"insecureSkipVerify"}},
		{name: "both", endpoint: "http://10.0.0.1:8080", tls: &v1alpha1.TLSOptions{InsecureSkipVerify: true}, want: []string{"plain http", "insecureSkipVerify"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Insecurities(memberCluster(tt.endpoint, tt.tls))
			if len(got) != len(tt.want) {
				t.Fatalf("Insecurities() = %q, want %d entries like %q", got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("Insecurities()[%d] = %q, want it to contain %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}
