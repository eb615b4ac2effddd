package membercache

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// Entry is one cached object: the JSON the gateway serves and what
// selectors and ordering read. An Entry never changes once stored; an
// update stores a new one.
type Entry struct {
	// Cluster is the member the object lives in.
	Cluster string
	// Namespace and Name are the object's (Namespace empty for
	// cluster-scoped kinds).
	Namespace, Name string
	// RV is the cache's resourceVersion of this state of the object.
	RV uint64
	// memberRV is a hash of the member's resourceVersion of the object: a
	// relist that finds it unchanged changes nothing.
	memberRV uint64
	// uid is a hash of the object's UID: an object of the same name with
	// another UID is another object (deleted, then added).
	uid uint64
	// data is the pruned object as served (with the cache's
	// resourceVersion and the flotilla.io/cluster label), compressed.
	data  []byte
	codec *codec
	// labels are sorted key/value pairs (k0, v0, k1, v1, ...).
	labels pairs
	// fields are the values of the kind's selectable fields, packed.
	fields string
}

// AppendJSON appends the object's JSON to buf.
func (e *Entry) AppendJSON(buf []byte) ([]byte, error) {
	out, err := e.codec.decompress(e.data, buf)
	if err != nil {
		return buf, fmt.Errorf("cached %s/%s from %s: %w", e.Namespace, e.Name, e.Cluster, err)
	}
	return out, nil
}

// JSON returns the object's JSON.
func (e *Entry) JSON() ([]byte, error) { return e.AppendJSON(nil) }

// Labels returns the object's labels (with flotilla.io/cluster) for
// label selectors.
func (e *Entry) Labels() labels.Labels { return e.labels }

// Fields returns the fields a field selector may name.
func (e *Entry) Fields() fields.Fields { return entryFields{e} }

// entryFields adds metadata.name and metadata.namespace to an entry's
// stored fields.
type entryFields struct{ e *Entry }

func (f entryFields) Has(field string) bool {
	if field == "metadata.name" || field == "metadata.namespace" {
		return true
	}
	_, ok := f.e.codec.field(f.e.fields, field)
	return ok
}

func (f entryFields) Get(field string) string {
	switch field {
	case "metadata.name":
		return f.e.Name
	case "metadata.namespace":
		return f.e.Namespace
	}
	v, _ := f.e.codec.field(f.e.fields, field)
	return v
}

// key is the entry's place in a list, as a continue token records it.
func (e *Entry) key() string { return e.Namespace + "\x00" + e.Name + "\x00" + e.Cluster }

// compare orders entries: namespace, then name, then cluster, so that a
// list reads as kubectl prints it and the same name in two members sits
// together. It allocates nothing (lists sort every entry).
func (e *Entry) compare(namespace, name, cluster string) int {
	if c := strings.Compare(e.Namespace, namespace); c != 0 {
		return c
	}
	if c := strings.Compare(e.Name, name); c != 0 {
		return c
	}
	return strings.Compare(e.Cluster, cluster)
}

// id identifies the object in the cache.
type id struct{ cluster, namespace, name string }

func (e *Entry) id() id { return id{e.Cluster, e.Namespace, e.Name} }

// pairs is a compact, sorted map of strings: a slice costs less than a map
// for the handful of labels and fields an object has, and its strings are
// interned.
type pairs []string

func newPairs(m map[string]string) pairs {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	p := make(pairs, 0, 2*len(keys))
	for _, k := range keys {
		p = append(p, intern(k), intern(m[k]))
	}
	return p
}

func (p pairs) find(key string) (int, bool) {
	n := len(p) / 2
	i := sort.Search(n, func(i int) bool { return p[2*i] >= key })
	return i, i < n && p[2*i] == key
}

// Has reports whether key is present.
func (p pairs) Has(key string) bool { _, ok := p.find(key); return ok }

// Get returns key's value ("" when absent).
func (p pairs) Get(key string) string {
	if i, ok := p.find(key); ok {
		return p[2*i+1]
	}
	return ""
}

// Lookup returns key's value and whether it is present.
func (p pairs) Lookup(key string) (string, bool) {
	if i, ok := p.find(key); ok {
		return p[2*i+1], true
	}
	return "", false
}

// String formats the pairs as a selector would.
func (p pairs) String() string {
	m := make(map[string]string, len(p)/2)
	for i := 0; i+1 < len(p); i += 2 {
		m[p[i]] = p[i+1]
	}
	return labels.Set(m).String()
}

// interned keeps one copy of each label key, label value and field value
// the cache holds: a hundred thousand pods share a few hundred of them.
// It only grows; what it holds is bounded by the distinct label values of
// the federation, not by the number of objects.
var interned = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

// internLimit: longer strings are not worth keeping forever.
// internCap bounds the interner: labels unique to one pod (a StatefulSet
// pod's name label) are interned only until it is full.
const (
	internLimit = 64
	internCap   = 1 << 17
)

func intern(s string) string {
	if len(s) > internLimit {
		return s
	}
	interned.Lock()
	defer interned.Unlock()
	if v, ok := interned.m[s]; ok {
		return v
	}
	if len(interned.m) < internCap {
		interned.m[s] = s
	}
	return s
}
