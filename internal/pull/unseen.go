package pull

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/applied"
	"github.com/flotilla-io/flotilla/internal/dispatch"
	"github.com/flotilla-io/flotilla/internal/member"
)

// unseen remembers the intents a session created that its cache had not
// seen yet, by the object they are for. Delete looks there when the cache
// holds no intent for an object: an intent created a moment ago and
// deleted at once (its host object deleted) must not be taken for absent,
// or the agent would apply a copy nobody deletes. An entry goes when the
// cache sees the intent or a delete finds it gone.
type unseen struct {
	mu sync.Mutex
	m  map[string]createdIntent // objectKey → the intent created
}

// createdIntent is an intent a session created.
type createdIntent struct {
	name string
	uid  types.UID
}

// add remembers the intent created for the object key.
func (u *unseen) add(key string, ci createdIntent) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[string]createdIntent{}
	}
	u.m[key] = ci
}

// get returns the intent created for the object key, if the cache has not
// seen it yet.
func (u *unseen) get(key string) (createdIntent, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	ci, ok := u.m[key]
	return ci, ok
}

// drop forgets the intent of the object key when it is uid ("" for any;
// one remembered without a uid goes for any).
func (u *unseen) drop(key string, uid types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if ci, ok := u.m[key]; ok && (uid == "" || ci.uid == "" || ci.uid == uid) {
		delete(u.m, key)
	}
}

// created notes an intent the session just created for obj, unless the
// cache has it already. The cache's handler drops the entry when it sees
// the intent (after its store has it): noting first, then looking, misses
// neither order of the two.
func (s *Session) created(obj *unstructured.Unstructured, ci *v1alpha1.ClusterIntent) {
	key := objectKey(obj.GroupVersionKind().GroupKind(), obj.GetNamespace(), obj.GetName())
	s.unseen.add(key, createdIntent{name: ci.Name, uid: ci.UID})
	if objs, _ := s.intents.GetIndexer().ByIndex(byObject, key); len(objs) > 0 {
		s.unseen.drop(key, ci.UID)
	}
}

// seen drops the entry of an intent the cache now holds.
func (s *Session) seen(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	keys, _ := indexObject(u)
	for _, k := range keys {
		s.unseen.drop(k, u.GetUID())
	}
}

// deleteUnseen deletes the intent of an object the cache holds none for
// when the session created one the cache has not seen yet; otherwise the
// object has no intent (Absent).
func (s *Session) deleteUnseen(ctx context.Context, key string) (dispatch.Outcome, error) {
	c, ok := s.unseen.get(key)
	if !ok {
		return dispatch.Absent, nil
	}
	err := s.deleteIntent(ctx, c.name, c.uid)
	switch {
	case apierrors.IsNotFound(err):
		s.unseen.drop(key, c.uid)
		return dispatch.Absent, nil
	case err != nil:
		return "", fmt.Errorf("the intent created a moment ago: %w", err)
	}
	return "", member.ErrAwaitingAgent
}

// mayExist says whether a failed create may have left the intent on the
// hub (a write that may have been applied), or found one there
// (AlreadyExists): anything but a refusal of the request itself.
func mayExist(err error) bool {
	return apierrors.IsAlreadyExists(err) || applied.Maybe(err)
}
