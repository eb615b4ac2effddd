// Package copies answers, for the controllers that look at member copies
// (propagate, status, migrate), one question under one rule: for a
// cluster, is there a usable session, and what does its cache hold of an
// object? A cluster is usable when its MemberCluster exists, is not being
// deleted and is Ready; a usable cluster whose session has not started, or
// whose cache of the kind is still listing, is "waiting": its copies are
// not known yet, which is different from absent.
package copies

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/member"
)

// Usable reports whether Flotilla reads and writes the copies in cluster
// name: its MemberCluster mc exists (nil: it does not), is not being
// deleted and is Ready. When it is not, the message says why.
func Usable(mc *v1alpha1.MemberCluster, name string) (bool, string) {
	switch {
	case mc == nil:
		return false, fmt.Sprintf("MemberCluster %s does not exist", name)
	case !mc.DeletionTimestamp.IsZero():
		return false, "the MemberCluster is being deleted"
	}
	c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionTrue {
		msg := "the cluster is not Ready"
		if c != nil {
			msg += fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
		}
		return false, msg
	}
	return true, ""
}

// NoSessionYet is why a usable cluster has no session: the cluster
// controller has not started it yet.
const NoSessionYet = "no connection to the cluster yet"

// Copy is one cluster's member and its copy of one object.
type Copy struct {
	// Cluster is the cluster's name.
	Cluster string
	// Session reaches the member (push or pull); nil when the cluster is
	// not usable or its session has not started.
	Session member.Member
	// Why says why Session is nil: Usable's message, or NoSessionYet.
	Why string
	// State is the member cache's state for the object's kind (with a
	// Session and a looked-up object only).
	State member.CacheState
	// Live is the managed copy in the member's cache; nil when absent or
	// not Known.
	Live *unstructured.Unstructured
	// looked: Of looked the object up (State is meaningful).
	looked bool
}

// Starting reports whether the cluster is usable but its session has not
// started yet.
func (c Copy) Starting() bool { return c.Session == nil && c.Why == NoSessionYet }

// Known reports whether Live is the member's truth: a session whose cache
// of the kind has synced (Live nil then means no managed copy).
func (c Copy) Known() bool { return c.looked && c.Session != nil && c.State == member.CacheSynced }

// Waiting reports whether the copy will be known shortly: the session is
// starting or the cache is listing. A stalled cache (a slow member, or one
// that forbids the list) is not waited for.
func (c Copy) Waiting() bool { return c.Starting() || c.Syncing() }

// Syncing reports whether the member's cache of the kind is still
// listing.
func (c Copy) Syncing() bool { return c.looked && c.Session != nil && c.State == member.CacheSyncing }

// Sessions finds the members.
type Sessions interface {
	// Get returns a cluster's member if it is usable, nil if none.
	Get(name string) member.Member
}

var _ Sessions = (*member.Pool)(nil)

// Session returns cluster name's session under the usability rule,
// without looking anything up in its cache.
func Session(pool Sessions, mc *v1alpha1.MemberCluster, name string) Copy {
	c := Copy{Cluster: name}
	if ok, why := Usable(mc, name); !ok {
		c.Why = why
		return c
	}
	if c.Session = pool.Get(name); c.Session == nil {
		c.Why = NoSessionYet
	}
	return c
}

// Of returns cluster name's session and its managed copy of the object
// gvr namespace/name, starting the member cache of gvr on first use and
// waiting while it lists (member.Session.WaitManaged: at most
// member.SyncWait, or until ctx ends). It blocks: call it from reconcilers
// only.
func Of(ctx context.Context, pool Sessions, mc *v1alpha1.MemberCluster, name string, gvr schema.GroupVersionResource, namespace, objName string) Copy {
	c := Session(pool, mc, name)
	if c.Session != nil {
		c.Session.WaitManaged(ctx, gvr)
		c.Live, c.State = c.Session.ManagedObject(gvr, namespace, objName)
		c.looked = true
	}
	return c
}

// Unrecorded returns, among the clusters with a session other than those
// in known, the ones whose cache already holds a copy of the object that
// Flotilla's field manager wrote (a write whose status update was lost to
// a conflict or a crash). It starts no cache. An object that merely
// carries the managed label in a cluster the object was never placed on is
// not ours and is not returned, and neither is a namespace an earlier
// version created on demand (dispatch.LegacyOnDemandNamespace): taking it
// for a lost copy of a propagated Namespace would delete the copies and
// the member's own objects in it.
func Unrecorded(pool *member.Pool, known func(cluster string) bool, gvr schema.GroupVersionResource, namespace, name string) []string {
	var out []string
	for _, cluster := range pool.Names() {
		if known(cluster) {
			continue
		}
		sess := pool.Get(cluster)
		if sess == nil {
			continue
		}
		if obj, found := sess.PeekManagedObject(gvr, namespace, name); found && dispatch.Written(obj) && !dispatch.LegacyOnDemandNamespace(obj) {
			out = append(out, cluster)
		}
	}
	return out
}
