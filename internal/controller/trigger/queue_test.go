package trigger

import (
	"context"
	"slices"
	"testing"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
)

// connect starts q's source on wq, as a controller does.
func connect(t *testing.T, q *Queue[string], wq workqueue.TypedRateLimitingInterface[string]) {
	t.Helper()
	if err := q.Source().Start(context.Background(), wq); err != nil {
		t.Fatal(err)
	}
}

// drain gets n items from wq in the order it hands them out.
func drain(wq workqueue.TypedRateLimitingInterface[string], n int) []string {
	var out []string
	for range n {
		item, _ := wq.Get()
		wq.Done(item)
		out = append(out, item)
	}
	return out
}

// TestAddUrgent: on a priority queue an urgent request is handed out
// before the ones added earlier; a plain queue keeps arrival order; both
// deduplicate.
func TestAddUrgent(t *testing.T) {
	for _, tc := range []struct {
		name string
		wq   workqueue.TypedRateLimitingInterface[string]
		want []string
	}{
		{"priority queue", priorityqueue.New[string]("test"), []string{"urgent", "a", "b"}},
		{"plain queue", workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()), []string{"a", "b", "urgent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.wq.ShutDown()
			q := &Queue[string]{}
			connect(t, q, tc.wq)
			q.Add("a")
			q.Add("b")
			q.AddUrgent("urgent")
			q.Add("b") // already queued: still once
			if n := tc.wq.Len(); n != 3 {
				t.Fatalf("queue holds %d items, want 3", n)
			}
			if got := drain(tc.wq, 3); !slices.Equal(got, tc.want) {
				t.Fatalf("order %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAddUrgentBeforeStart: requests that arrive before the controller
// starts are kept and handed over once.
func TestAddUrgentBeforeStart(t *testing.T) {
	q := &Queue[string]{}
	q.AddUrgent("x")
	q.Add("x")
	q.Add("y")
	wq := priorityqueue.New[string]("test")
	defer wq.ShutDown()
	connect(t, q, wq)
	if n := wq.Len(); n != 2 {
		t.Fatalf("queue holds %d items after start, want 2", n)
	}
}
