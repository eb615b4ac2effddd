package membercache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// lastApplied is kubectl's client-side apply annotation: a second copy of
// the object, never needed to read a pod or an event.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// encode prunes obj (which the caller hands over) and turns it into the
// Entry served for it at resourceVersion rv: managed fields and the
// last-applied annotation go, the flotilla.io/cluster label comes.
func (c *Cache) encode(k *Kind, cd *codec, cluster string, obj runtime.Object, rv uint64) (*Entry, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("%s from %s: %w", k.Kind, cluster, err)
	}
	memberRV, uid := versionHash(m.GetResourceVersion()), versionHash(string(m.GetUID()))
	m.SetManagedFields(nil)
	if a := m.GetAnnotations(); a[lastApplied] != "" {
		delete(a, lastApplied)
		m.SetAnnotations(a)
	}
	if cluster != "" {
		l := m.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[v1alpha1.LabelCluster] = cluster
		m.SetLabels(l)
	} else if l := m.GetLabels(); l[v1alpha1.LabelCluster] != "" {
		// The host's own object: whoever wrote it may not pass it off as a
		// member's (a reader's -l flotilla.io/cluster=NAME).
		delete(l, v1alpha1.LabelCluster)
		m.SetLabels(l)
	}
	m.SetResourceVersion(c.FormatRV(rv))
	obj.GetObjectKind().SetGroupVersionKind(k.Resource.GroupVersion().WithKind(k.Kind))
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s/%s from %s: %w", k.Kind, m.GetNamespace(), m.GetName(), cluster, err)
	}
	var fields map[string]string
	if k.fields != nil {
		fields = k.fields(obj)
	}
	compressed, err := cd.compress(data)
	if err != nil {
		return nil, err
	}
	return &Entry{
		Cluster:   intern(cluster),
		Namespace: intern(m.GetNamespace()),
		Name:      m.GetName(),
		RV:        rv,
		data:      compressed,
		codec:     cd,
		memberRV:  memberRV,
		uid:       uid,
		labels:    newPairs(m.GetLabels()),
		fields:    cd.packFields(fields),
	}, nil
}

// EventEntry returns ev's object as the event carries it: a deletion's
// last state at the deletion's resourceVersion, as kube-apiserver sends
// it. It decodes and re-encodes the object (once per change, however many
// watchers write it), so callers do it outside any lock.
func (c *Cache) EventEntry(ev Event) *Entry {
	switch {
	case ev.Entry == nil || ev.Entry.RV == ev.RV:
		return ev.Entry
	case ev.leaving != nil && ev.leaving.src == ev.Entry && ev.leaving.rv == ev.RV:
		return ev.leaving.get(c) // made once for every watcher
	}
	return c.withRV(ev.Entry, ev.RV)
}

// withRV returns a copy of e at resourceVersion rv (a deleted object's
// last state, as the watch event of its deletion carries it). The copy
// is e itself if its JSON cannot be read back (it then carries e's
// resourceVersion).
func (c *Cache) withRV(e *Entry, rv uint64) *Entry {
	js, err := e.JSON()
	if err != nil {
		return e
	}
	old := []byte(`"resourceVersion":"` + c.FormatRV(e.RV) + `"`)
	js = bytes.Replace(js, old, []byte(`"resourceVersion":"`+c.FormatRV(rv)+`"`), 1)
	data, err := e.codec.compress(js)
	if err != nil {
		return e
	}
	out := *e
	out.RV, out.data = rv, data
	return &out
}

// Decode returns the typed object of an entry (for Table rows).
func (k *Kind) Decode(e *Entry) (runtime.Object, error) {
	js, err := e.JSON()
	if err != nil {
		return nil, err
	}
	obj := k.newObject()
	if err := json.Unmarshal(js, obj); err != nil {
		return nil, fmt.Errorf("decode cached %s %s/%s: %w", k.Kind, e.Namespace, e.Name, err)
	}
	return obj, nil
}

// rvBase separates the cache's epoch from its sequence in a
// resourceVersion: epoch*rvBase + sequence. A sequence of 10^12 changes
// lasts 15 years at 2,000 changes a second.
const rvBase = 1_000_000_000_000

// maxEpoch bounds the epoch so that epoch*rvBase plus the sequence stays
// below 2^63 (clients may parse a resourceVersion as an int64).
const maxEpoch = 9_000_000

// FormatRV is the resourceVersion string of sequence number seq.
func (c *Cache) FormatRV(seq uint64) string {
	return strconv.FormatUint(c.epoch*rvBase+seq, 10)
}

// ParseRV returns the sequence number of a resourceVersion this cache
// issued; ok is false for one it did not (another gateway process, one
// ahead of every change the cache has seen, or not a number).
func (c *Cache) ParseRV(rv string) (seq uint64, ok bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	base := c.epoch * rvBase
	if err != nil || n < base || n-base > c.seq.Load() {
		return 0, false
	}
	return n - base, true
}
