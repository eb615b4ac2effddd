package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/flotilla-io/flotilla/internal/localenv"
)

// Kinds the harness watches.
const (
	kindDeployment = "Deployment"
	kindConfigMap  = "ConfigMap"
	// kindPod observations are named after the workload whose pod they
	// are (the pod's app label), not after the pod.
	kindPod = "Pod"
)

// isCopy says whether o is a member copy of a workload's objects (not the
// host's object, not a member pod).
func isCopy(o observation) bool {
	return o.cluster != localenv.HostName && o.kind != kindPod
}

// observation is what the harness keeps of one watch event: the object as
// it is now, reduced to what the scenarios look at.
type observation struct {
	cluster string
	kind    string
	name    string
	// image is a Deployment's first container image.
	image string
	// ready says a Deployment's status reports all replicas ready for its
	// current generation, or a pod's Ready condition is True.
	ready bool
}

// key identifies an object in one cluster.
type key struct{ cluster, kind, name string }

// phase records the first time each object matched a predicate, until
// want objects did.
type phase struct {
	match func(observation) bool
	want  int
	mu    sync.Mutex
	seen  map[key]time.Time
	last  time.Time
	done  chan struct{}
}

// recorder passes every observation to the phases in progress.
type recorder struct {
	mu     sync.Mutex
	phases []*phase
}

func newRecorder() *recorder { return &recorder{} }

// begin starts a phase that is complete once want objects matched.
func (r *recorder) begin(want int, match func(observation) bool) *phase {
	p := &phase{match: match, want: want, seen: make(map[key]time.Time, want), done: make(chan struct{})}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phases = append(r.phases, p)
	return p
}

// end stops passing observations to p.
func (r *recorder) end(p *phase) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.phases {
		if r.phases[i] == p {
			r.phases = append(r.phases[:i], r.phases[i+1:]...)
			return
		}
	}
}

// observe records o, seen now, in every phase it matches.
func (r *recorder) observe(o observation) {
	now := time.Now()
	r.mu.Lock()
	phases := append([]*phase(nil), r.phases...)
	r.mu.Unlock()
	for _, p := range phases {
		p.record(o, now)
	}
}

func (p *phase) record(o observation, now time.Time) {
	if !p.match(o) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k := key{o.cluster, o.kind, o.name}
	if _, dup := p.seen[k]; dup {
		return
	}
	p.seen[k] = now
	p.last = now
	if len(p.seen) == p.want {
		close(p.done)
	}
}

// at returns when an object first matched.
func (p *phase) at(cluster, kind, name string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.seen[key{cluster, kind, name}]
	return t, ok
}

// progress returns how many objects matched and when the last one did.
func (p *phase) progress() (int, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen), p.last
}

// stallTimeout is how long a phase may make no progress before the
// harness gives up on it.
const stallTimeout = 3 * time.Minute

// wait blocks until the phase is complete, ctx ends or nothing new matched
// for stallTimeout, logging progress every 10 s.
func (p *phase) wait(ctx context.Context, what string) error {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	lastN, lastChange := -1, time.Now()
	for {
		select {
		case <-p.done:
			return nil
		case <-ctx.Done():
			n, _ := p.progress()
			return fmt.Errorf("%s: %d of %d seen when the run timed out: %w", what, n, p.want, ctx.Err())
		case now := <-tick.C:
			n, _ := p.progress()
			logf("  %s: %d/%d", what, n, p.want)
			if n != lastN {
				lastN, lastChange = n, now
			} else if now.Sub(lastChange) > stallTimeout {
				return fmt.Errorf("%s: stuck at %d of %d for %s", what, n, p.want, stallTimeout)
			}
		}
	}
}

// watchCluster starts informers for the Deployments (and, with configMaps,
// the ConfigMaps; with pods, the Pods) of one namespace of a cluster,
// passing every add and update to the recorder, and waits for their
// initial lists. They run until the harness stops its watches. The
// informers keep trimmed objects only.
func (b *bench) watchCluster(cs kubernetes.Interface, cluster, ns string, configMaps, pods bool) error {
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns), informers.WithTransform(trim))
	handler := func(obj any) {
		if o, ok := observe(cluster, obj); ok {
			b.rec.observe(o)
		}
	}
	handlers := cache.ResourceEventHandlerFuncs{AddFunc: handler, UpdateFunc: func(_, obj any) { handler(obj) }}
	if _, err := f.Apps().V1().Deployments().Informer().AddEventHandler(handlers); err != nil {
		return fmt.Errorf("watch %s Deployments: %w", cluster, err)
	}
	if configMaps {
		if _, err := f.Core().V1().ConfigMaps().Informer().AddEventHandler(handlers); err != nil {
			return fmt.Errorf("watch %s ConfigMaps: %w", cluster, err)
		}
	}
	if pods {
		if _, err := f.Core().V1().Pods().Informer().AddEventHandler(handlers); err != nil {
			return fmt.Errorf("watch %s Pods: %w", cluster, err)
		}
	}
	f.Start(b.watchCtx.Done())
	for typ, ok := range f.WaitForCacheSync(b.watchCtx.Done()) {
		if !ok {
			return fmt.Errorf("watch %s %v: initial list did not complete", cluster, typ)
		}
	}
	return nil
}

// observe turns an informer object into an observation.
func observe(cluster string, obj any) (observation, bool) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		ob := observation{cluster: cluster, kind: kindDeployment, name: o.Name}
		if c := o.Spec.Template.Spec.Containers; len(c) > 0 {
			ob.image = c[0].Image
		}
		want := ptr.Deref(o.Spec.Replicas, 1)
		st := o.Status
		ob.ready = st.ObservedGeneration >= o.Generation && st.ReadyReplicas == want && st.UpdatedReplicas == want && st.Replicas == want
		return ob, true
	case *corev1.ConfigMap:
		return observation{cluster: cluster, kind: kindConfigMap, name: o.Name}, true
	case *corev1.Pod:
		ob := observation{cluster: cluster, kind: kindPod, name: o.Labels[appLabel]}
		for _, c := range o.Status.Conditions {
			if c.Type == corev1.PodReady {
				ob.ready = c.Status == corev1.ConditionTrue
			}
		}
		return ob, ob.name != ""
	}
	return observation{}, false
}

// trim keeps of an object what observe needs, so that the informers of
// 10,000s of objects stay small.
func trim(obj any) (any, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		t := &appsv1.Deployment{}
		t.Name, t.Namespace, t.ResourceVersion, t.Generation = o.Name, o.Namespace, o.ResourceVersion, o.Generation
		t.Spec.Replicas = o.Spec.Replicas
		if c := o.Spec.Template.Spec.Containers; len(c) > 0 {
			t.Spec.Template.Spec.Containers = []corev1.Container{{Image: c[0].Image}}
		}
		t.Status = o.Status
		t.Status.Conditions = nil
		return t, nil
	case *corev1.ConfigMap:
		t := &corev1.ConfigMap{}
		t.Name, t.Namespace, t.ResourceVersion = o.Name, o.Namespace, o.ResourceVersion
		return t, nil
	case *corev1.Pod:
		t := &corev1.Pod{}
		t.Name, t.Namespace, t.ResourceVersion = o.Name, o.Namespace, o.ResourceVersion
		t.Labels = map[string]string{appLabel: o.Labels[appLabel]}
		for _, c := range o.Status.Conditions {
			if c.Type == corev1.PodReady {
				t.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status}}
			}
		}
		return t, nil
	}
	return obj, nil
}
