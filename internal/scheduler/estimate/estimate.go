// Package estimate gives scheduling decisions their members' simulated
// room (framework.Unit.Fits): per-node placement on each member's node and
// pod caches (member.Nodes, nodefit), less what earlier decisions reserved
// there and is not running yet (ledger). It also records each decision in
// the ledger. Decisions that use it are serialised between Fill and
// Reserve, so two of them never count the same free room.
package estimate

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/member"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/ledger"
)

// Members gives a member's node-level view: it runs f with it and reports
// whether there was one (a push member whose caches are filled).
type Members interface {
	EstimateNodes(cluster string, f func(member.Nodes)) bool
}

// PoolMembers reads the node-level views of a Pool's push sessions.
type PoolMembers struct{ Pool *member.Pool }

// EstimateNodes implements Members.
func (p PoolMembers) EstimateNodes(cluster string, f func(member.Nodes)) bool {
	s, ok := p.Pool.Get(cluster).(interface{ EstimateNodes(func(member.Nodes)) bool })
	return ok && s.EstimateNodes(f)
}

// Estimator fills and records decisions. The zero value is not usable:
// set Members and Ledger.
type Estimator struct {
	// Members are the node-level views.
	Members Members
	// Ledger holds the reservations.
	Ledger *ledger.Ledger

	mu sync.Mutex

	keysMu    sync.Mutex
	workloads map[string]string // unit key (the FederatedObject's) → Workload
}

// Workload is the member-side key of a unit's object (member.WorkloadKey),
// the key of its bound pods and reservations.
func Workload(u *framework.Unit) string {
	return member.WorkloadKey(u.GVK.Group, u.GVK.Kind, u.Namespace, u.Name)
}

// Applies reports whether a unit is estimated: it has a pod template and
// replicas.
func Applies(u *framework.Unit) bool { return u.Shape != nil && u.Replicas != nil }

// Lock serialises a decision from Fill to Reserve.
func (e *Estimator) Lock() { e.mu.Lock() }

// Unlock ends what Lock started.
func (e *Estimator) Unlock() { e.mu.Unlock() }

// Fill sets u.Fits for every cluster with a node-level view: a push member
// whose caches are filled and that has nodes.
func (e *Estimator) Fill(u *framework.Unit, clusters []*v1alpha1.MemberCluster) {
	if !Applies(u) {
		return
	}
	w := Workload(u)
	u.Fits = make(map[string]framework.Fit, len(clusters))
	for _, c := range clusters {
		e.Members.EstimateNodes(c.Name, func(n member.Nodes) {
			res := n.Fit(u.Shape)
			if res.Total == 0 {
				// No nodes at all (an API server alone, a virtual
				// cluster): nothing to simulate; the sums decide.
				return
			}
			version := n.Version()
			reserved, _ := e.Ledger.Reserved(c.Name, w, n.Bound, version)
			held := ledger.Displaced(reserved, res, u.Shape)
			bound := n.Bound(w)
			u.Fits[c.Name] = framework.Fit{
				Replicas: int64(bound) + max(res.Replicas-held, 0),
				Reserved: held,
				Bound:    bound,
				Version:  version,
				Nodes:    res,
			}
		})
	}
}

// Reserve records a unit's placement in the ledger (each cluster's
// replicas; the object's whole count in every cluster for one that is not
// divided) and returns the undo for a placement that could not be
// written. Only clusters with a node-level view (Unit.Fits) are reserved:
// nothing would see the others' pods start, and what the ledger holds in
// a member whose view is gone for a moment stays. A count starts a
// reservation only when it is new: it differs from the count last
// recorded in the cluster, or, never recorded there, from the placement
// in force (Unit.Current); with restore (after a restart, whose ledger is
// empty) every count never recorded is new. A reservation that ended is
// not started again by a decision that keeps the count.
func (e *Estimator) Reserve(u *framework.Unit, placement []v1alpha1.ClusterPlacement, restore bool) (undo func()) {
	if !Applies(u) {
		return func() {}
	}
	w := Workload(u)
	count := func(c v1alpha1.ClusterPlacement) int64 {
		if c.Replicas != nil {
			return max(int64(*c.Replicas), 0)
		}
		return max(int64(*u.Replicas), 0)
	}
	inForce := map[string]int64{}
	for _, c := range u.Current {
		inForce[c.Cluster] = count(c)
	}
	records := e.Ledger.Records(w)
	fresh := func(cluster string, n int64) bool {
		if last, ok := records[cluster]; ok {
			// Recorded counts are whole; Current's of an undivided
			// object are today's count, not the one it was placed with.
			return last != n
		}
		was, placed := inForce[cluster]
		return restore || !placed || was != n
	}
	p := make(map[string]ledger.Count, len(placement))
	if restore {
		// A restore reserves only where nothing is recorded: what is
		// stays as it is, even if the placement read is older than the
		// decision that recorded it.
		for cluster, n := range records {
			p[cluster] = ledger.Count{Replicas: n, Keep: true}
		}
	}
	for _, c := range placement {
		n := count(c)
		f, ok := u.Fits[c.Cluster]
		_, recorded := records[c.Cluster]
		switch {
		case restore && recorded:
			continue // kept as recorded (above)
		case !ok:
			p[c.Cluster] = ledger.Count{Replicas: n, Keep: true}
			continue
		}
		p[c.Cluster] = ledger.Count{
			Replicas: n,
			Fresh:    fresh(c.Cluster, n),
			Observed: ledger.Observed{Known: true, Bound: f.Bound, Version: f.Version},
		}
	}
	e.keysMu.Lock()
	if e.workloads == nil {
		e.workloads = map[string]string{}
	}
	e.workloads[u.Key] = w
	e.keysMu.Unlock()
	return e.Ledger.Reserve(w, ledger.PerReplica(u.Shape.Requests), p)
}

// Unrestored reports whether a unit's placement in force has a cluster
// with a node-level view where the ledger recorded nothing for it: after a
// restart, or since the member's view came back, its replicas there may
// still be starting. Restore reserves them.
func (e *Estimator) Unrestored(u *framework.Unit) bool {
	if !Applies(u) {
		return false
	}
	w := Workload(u)
	for _, c := range u.Current {
		if _, ok := e.Ledger.Recorded(w, c.Cluster); ok {
			continue
		}
		viewed := false
		e.Members.EstimateNodes(c.Cluster, func(n member.Nodes) { viewed = n.Fit(u.Shape).Total > 0 })
		if viewed {
			return true
		}
	}
	return false
}

// Restore reserves a unit's placement in force where it is unrestored
// (see Unrestored); a reservation whose pods are bound ends at once. It
// locks the estimator and leaves u.Fits as they were.
func (e *Estimator) Restore(u *framework.Unit) {
	e.Lock()
	defer e.Unlock()
	if !e.Unrestored(u) {
		return
	}
	clusters := make([]*v1alpha1.MemberCluster, len(u.Current))
	for i, c := range u.Current {
		clusters[i] = &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: c.Cluster}}
	}
	fits := u.Fits
	e.Fill(u, clusters)
	e.Reserve(u, u.Current, true)
	u.Fits = fits
}

// Forget ends the reservations of the unit whose key (its
// FederatedObject's namespace/name) is given: the object is deleted, so
// its replicas will not start.
func (e *Estimator) Forget(key string) {
	e.keysMu.Lock()
	w, ok := e.workloads[key]
	delete(e.workloads, key)
	e.keysMu.Unlock()
	if ok {
		e.Ledger.Forget(w)
	}
}

// maxNotes bounds how many clusters an explanation names.
const maxNotes = 5

// Explain describes the clusters whose room is short of the unit's
// replicas, fewest first: "member-2 fits 3 of 10 (most free on one node:
// cpu 2)"; "" when every estimated cluster fits them all.
func Explain(u *framework.Unit) string {
	if u.Fits == nil || u.Replicas == nil {
		return ""
	}
	want := int64(*u.Replicas)
	names := make([]string, 0, len(u.Fits))
	for name, f := range u.Fits {
		if f.Replicas < want {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := u.Fits[names[i]], u.Fits[names[j]]
		if a.Replicas != b.Replicas {
			return a.Replicas < b.Replicas
		}
		return names[i] < names[j]
	})
	notes := make([]string, 0, min(len(names), maxNotes))
	for _, name := range names[:min(len(names), maxNotes)] {
		notes = append(notes, u.Fits[name].Explain(name, want))
	}
	if more := len(names) - len(notes); more > 0 {
		notes = append(notes, fmt.Sprintf("%d more short of room", more))
	}
	return strings.Join(notes, "; ")
}
