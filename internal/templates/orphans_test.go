package templates

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
)

// deployment returns a version of a Deployment with annotations.
func deployment(name string, uid types.UID, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}
	u.SetNamespace("shop")
	u.SetName(name)
	u.SetUID(uid)
	u.SetAnnotations(annotations)
	return u
}

func TestOrphans(t *testing.T) {
	web := Key{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	api := Key{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "api"}
	orphan := map[string]string{v1alpha1.AnnotationOrphan: "true"}
	// step is one call: a version of an object the informer receives
	// (obj) or a forget of a key, at a time.
	type step struct {
		at     time.Duration
		obj    *unstructured.Unstructured
		forget *Key
	}
	tests := []struct {
		name  string
		max   int
		steps []step
		ask   Key
		uid   types.UID
		after time.Duration // when it is asked
		want  bool
		size  int
	}{
		{name: "nothing seen", ask: web, uid: "u1"},
		{name: "seen with the annotation",
			steps: []step{{obj: deployment("web", "u1", orphan)}}, ask: web, uid: "u1", want: true, size: 1},
		{name: "annotated, then deleted (the final state is annotated too)",
			steps: []step{{obj: deployment("web", "u1", nil)}, {at: time.Millisecond, obj: deployment("web", "u1", orphan)}, {at: 2 * time.Millisecond, obj: deployment("web", "u1", orphan)}},
			ask:   web, uid: "u1", after: 2 * time.Millisecond, want: true, size: 1},
		{name: "annotation removed before the delete",
			steps: []step{{obj: deployment("web", "u1", orphan)}, {at: time.Millisecond, obj: deployment("web", "u1", map[string]string{"a": "b"})}},
			ask:   web, uid: "u1", after: time.Millisecond},
		{name: "no annotation: nothing remembered",
			steps: []step{{obj: deployment("web", "u1", map[string]string{"a": "b"})}}, ask: web, uid: "u1"},
		{name: "annotation not true",
			steps: []step{{obj: deployment("web", "u1", map[string]string{v1alpha1.AnnotationOrphan: "yes"})}}, ask: web, uid: "u1"},
		{name: "another object of the same name (uid)",
			steps: []step{{obj: deployment("web", "u1", orphan)}}, ask: web, uid: "u2", size: 1},
		{name: "a new object of the same name without the annotation keeps the old one's",
			steps: []step{{obj: deployment("web", "u1", orphan)}, {obj: deployment("web", "u2", nil)}}, ask: web, uid: "u1", want: true, size: 1},
		{name: "another name",
			steps: []step{{obj: deployment("api", "u1", orphan)}}, ask: web, uid: "u1", size: 1},
		{name: "still remembered just before the memory ends",
			steps: []step{{obj: deployment("web", "u1", orphan)}}, ask: web, uid: "u1", after: OrphanMemory - time.Second, want: true, size: 1},
		{name: "forgotten after the memory",
			steps: []step{{obj: deployment("web", "u1", orphan)}}, ask: web, uid: "u1", after: OrphanMemory},
		{name: "each version renews the memory",
			steps: []step{{obj: deployment("web", "u1", orphan)}, {at: 4 * time.Minute, obj: deployment("web", "u1", orphan)}},
			ask:   web, uid: "u1", after: 4*time.Minute + OrphanMemory - time.Second, want: true, size: 1},
		{name: "consumed",
			steps: []step{{obj: deployment("web", "u1", orphan)}, {forget: &web}}, ask: web, uid: "u1"},
		{name: "forgetting one key keeps the others",
			steps: []step{{obj: deployment("web", "u1", orphan)}, {obj: deployment("api", "u2", orphan)}, {forget: &api}},
			ask:   web, uid: "u1", want: true, size: 1},
		{name: "a later object of the same key outlives the earlier",
			steps: []step{{obj: deployment("web", "u1", orphan)}, {at: time.Minute, obj: deployment("web", "u2", orphan)}},
			ask:   web, uid: "u2", after: time.Minute + OrphanMemory - time.Second, want: true, size: 1},
		{name: "deleted and created again with the annotation: the earlier object's copies stay",
			steps: []step{{obj: deployment("web", "u1", orphan)}, {at: time.Second, obj: deployment("web", "u2", orphan)}},
			ask:   web, uid: "u1", after: time.Second, want: true, size: 2},
		{name: "consumed: every object of the key",
			steps: []step{{obj: deployment("web", "u1", orphan)}, {obj: deployment("web", "u2", orphan)}, {obj: deployment("api", "u3", orphan)}, {forget: &web}},
			ask:   web, uid: "u2", size: 1},
		{name: "the oldest goes beyond the capacity", max: 2,
			steps: []step{{obj: deployment("web", "u1", orphan)}, {at: time.Second, obj: deployment("a", "u2", orphan)}, {at: 2 * time.Second, obj: deployment("b", "u3", orphan)}},
			ask:   web, uid: "u1", after: 2 * time.Second, size: 2},
		{name: "within the capacity all stay", max: 3,
			steps: []step{{obj: deployment("web", "u1", orphan)}, {at: time.Second, obj: deployment("a", "u2", orphan)}, {at: 2 * time.Second, obj: deployment("b", "u3", orphan)}},
			ask:   web, uid: "u1", after: 2 * time.Second, want: true, size: 3},
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &orphans{max: tt.max}
			for _, s := range tt.steps {
				if s.forget != nil {
					o.forget(*s.forget)
					continue
				}
				o.observe(s.obj, t0.Add(s.at))
			}
			if got := o.orphaned(tt.ask, tt.uid, t0.Add(tt.after)); got != tt.want {
				t.Errorf("orphaned(%s, %s) = %v, want %v", tt.ask, tt.uid, got, tt.want)
			}
			if got := o.len(); got != tt.size {
				t.Errorf("%d objects remembered, want %d", got, tt.size)
			}
		})
	}
}

// TestOrphansBounded: far more annotated objects than the capacity keep
// the memory at the capacity, newest kept.
func TestOrphansBounded(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	o := &orphans{}
	orphan := map[string]string{v1alpha1.AnnotationOrphan: "true"}
	n := 3 * OrphanCapacity
	for i := range n {
		o.observe(deployment(fmt.Sprintf("web-%d", i), types.UID(fmt.Sprint(i)), orphan), t0)
	}
	if got := o.len(); got != OrphanCapacity {
		t.Fatalf("%d objects remembered, want %d", got, OrphanCapacity)
	}
	key := func(i int) Key {
		return Key{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: fmt.Sprintf("web-%d", i)}
	}
	if !o.orphaned(key(n-1), types.UID(fmt.Sprint(n-1)), t0) {
		t.Errorf("the newest object was dropped")
	}
	if o.orphaned(key(0), "0", t0) {
		t.Errorf("the oldest object is still remembered beyond the capacity")
	}
}

// TestTransformObserves: the informer's transform notes the orphan
// annotation before it trims the object.
func TestTransformObserves(t *testing.T) {
	c := &Cache{}
	u := deployment("web", "u1", map[string]string{v1alpha1.AnnotationOrphan: "true", LastApplied: "{}"})
	out, err := c.transform(u)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.(*unstructured.Unstructured).GetAnnotations()[LastApplied]; ok {
		t.Errorf("transform kept %s", LastApplied)
	}
	if !c.LastSeenOrphan(Key{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}, "u1") {
		t.Errorf("transform did not note the orphan annotation")
	}
}
