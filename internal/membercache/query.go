package membercache

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ErrExpired is returned for a resourceVersion or continue token the
// cache cannot serve from (another gateway process's, or older than the
// changes it keeps): the client must list afresh (410 Gone).
var ErrExpired = errors.New("too old resource version")

// ErrBadContinue is returned for a continue token that is not one.
var ErrBadContinue = errors.New("invalid continue token")

// ListOptions ask for a list.
type ListOptions struct {
	Filter
	// Limit is the most items to return (0: all).
	Limit int64
	// Continue is the token of the previous page.
	Continue string
}

// ListResult is one page of a list.
type ListResult struct {
	// Items are in namespace, name, cluster order.
	Items []*Entry
	// RV is the list's resourceVersion: a watch from it misses nothing
	// that changed after the first page was read.
	RV string
	// Continue is the next page's token ("" on the last page).
	Continue string
	// Remaining is how many matching items follow this page; 0 on the
	// last page, and when a label or field selector makes the count
	// unknown (Continue still says whether more follow). Pages after the
	// first count from the cache as it is then, less the items already
	// served: objects created or deleted between pages make it an
	// estimate, as Kubernetes allows remainingItemCount to be.
	Remaining int64
}

type continueToken struct {
	// RV is the first page's resourceVersion, as served (with the epoch).
	RV    string `json:"rv"`
	Start string `json:"start"`
	// Served is how many items the pages before served.
	Served int64 `json:"n,omitempty"`
}

// List returns the entries of gr that pass the filter, a page at a time.
// Pages after the first are read from the cache as it is then: each
// object appears at most once, and one created or deleted meanwhile may
// or may not; the resourceVersion stays the first page's.
func (c *Cache) List(gr schema.GroupResource, o ListOptions) (ListResult, error) {
	s, err := c.store(gr)
	if err != nil {
		return ListResult{}, err
	}
	var tok continueToken
	var tokRV uint64
	if o.Continue != "" {
		raw, err := base64.RawURLEncoding.DecodeString(o.Continue)
		if err != nil || json.Unmarshal(raw, &tok) != nil || tok.Start == "" {
			return ListResult{}, ErrBadContinue
		}
		seq, ok := c.ParseRV(tok.RV)
		if !ok {
			return ListResult{}, ErrExpired // another gateway process's
		}
		tokRV = seq
		if tokRV < s.horizonSeq() {
			// Not needed for correctness of the page, but a token older
			// than the history is as stale as a kube-apiserver's
			// compacted one.
			return ListResult{}, ErrExpired
		}
	}
	var after []string
	if tok.Start != "" {
		after = strings.SplitN(tok.Start, "\x00", 3)
		for len(after) < 3 {
			after = append(after, "")
		}
	}
	var items []*Entry
	var remaining int64
	// The matches after the page are counted only without a label or
	// field selector (a kube-apiserver leaves remainingItemCount unset
	// with one). Without a member filter either, they are the store's (or
	// the namespace's) count less what was served, so the walk ends at the
	// first match after the page, as it does with a selector: a page costs
	// its own items, not the rest of the index.
	counting := (o.Label == nil || o.Label.Empty()) && (o.Field == nil || o.Field.Empty())
	byCount := counting && o.Cluster == ""
	s.mu.RLock()
	rv := s.last
	// In list order, from the page's start: the page is the first Limit
	// matches.
	s.ascend(o.Namespace, after, func(e *Entry) bool {
		switch {
		case !o.Matches(e):
			return true
		case o.Limit <= 0 || int64(len(items)) < o.Limit:
			items = append(items, e)
			return true
		}
		remaining++
		return counting && !byCount
	})
	if byCount && remaining > 0 {
		total := int64(len(s.objects))
		if o.Namespace != "" {
			total = int64(s.namespaces[o.Namespace])
		}
		remaining = max(total-tok.Served-int64(len(items)), 1)
	}
	s.mu.RUnlock()
	if o.Continue != "" {
		rv = tokRV
	}
	res := ListResult{RV: c.FormatRV(rv), Items: items}
	if remaining > 0 {
		if counting {
			res.Remaining = remaining
		}
		raw, _ := json.Marshal(continueToken{RV: c.FormatRV(rv), Start: items[len(items)-1].key(), Served: tok.Served + int64(len(items))})
		res.Continue = base64.RawURLEncoding.EncodeToString(raw)
	}
	return res, nil
}

func (s *store) horizonSeq() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.horizon
}

// Get returns the object of that namespace and name in every member that
// has one, ordered by member name.
func (c *Cache) Get(gr schema.GroupResource, namespace, name string) ([]*Entry, error) {
	s, err := c.store(gr)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	var out []*Entry
	for cluster := range s.clusters {
		if e := s.objects[id{cluster, namespace, name}]; e != nil {
			out = append(out, e)
		}
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster < out[j].Cluster })
	return out, nil
}

// CurrentRV is the resourceVersion of gr's latest change.
func (c *Cache) CurrentRV(gr schema.GroupResource) (string, error) {
	s, err := c.store(gr)
	if err != nil {
		return "", err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return c.FormatRV(s.last), nil
}

// Len is the number of cached objects of gr.
func (c *Cache) Len(gr schema.GroupResource) int {
	s, err := c.store(gr)
	if err != nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.objects)
}

func (o ListOptions) String() string {
	return fmt.Sprintf("namespace=%q labels=%v fields=%v limit=%d", o.Namespace, o.Label, o.Field, o.Limit)
}
