package nodefit

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name string, labels map[string]string, taints []corev1.Taint, ready bool) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}},
	}
}

// free is a node with cpu millicores, memory GiB and pod slots free.
func free(obj *corev1.Node, cpu, memGi, pods int64) *Node {
	return &Node{Object: obj, Alloc: Vector{CPU: cpu, Memory: memGi << 30, Pods: pods * PodAmount}}
}

func podSpec(cpu, mem string, mutate ...func(*corev1.PodSpec)) *corev1.PodSpec {
	req := corev1.ResourceList{}
	if cpu != "" {
		req[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	s := &corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req}}}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func TestEstimate(t *testing.T) {
	gpuTaint := []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	preferTaint := []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}
	zoneA := map[string]string{"zone": "a"}
	cordoned := node("cordoned", nil, nil, true)
	cordoned.Spec.Unschedulable = true
	tests := []struct {
		name     string
		spec     *corev1.PodSpec
		nodes    []*Node
		replicas int64
		eligible int
		explain  string
	}{
		{
			name: "200 half-cpu nodes hold no 4-cpu replica although they sum to 100 cpus",
			spec: podSpec("4", ""),
			nodes: func() []*Node {
				out := make([]*Node, 200)
				for i := range out {
					out[i] = free(node("small", nil, nil, true), 500, 1, 110)
				}
				return out
			}(),
			replicas: 0, eligible: 200, explain: "most free on one node: cpu 500m",
		},
		{
			name:     "each node is filled with what it holds",
			spec:     podSpec("1", "1Gi"),
			nodes:    []*Node{free(node("a", nil, nil, true), 4000, 2, 110), free(node("b", nil, nil, true), 2500, 8, 110)},
			replicas: 2 + 2, eligible: 2, explain: "most free on one node: cpu 4, memory 8Gi",
		},
		{
			name:     "pod slots limit",
			spec:     podSpec("100m", ""),
			nodes:    []*Node{free(node("a", nil, nil, true), 4000, 2, 3)},
			replicas: 3, eligible: 1,
		},
		{
			name:     "a pod without requests takes a pod slot",
			spec:     podSpec("", ""),
			nodes:    []*Node{free(node("a", nil, nil, true), 0, 0, 5)},
			replicas: 5, eligible: 1, explain: "1 eligible nodes are out of pod slots",
		},
		{
			name: "NoSchedule taints need a toleration, PreferNoSchedule ones do not",
			spec: podSpec("1", ""),
			nodes: []*Node{
				free(node("gpu", nil, gpuTaint, true), 8000, 8, 110),
				free(node("soft", nil, preferTaint, true), 1000, 8, 110),
			},
			replicas: 1, eligible: 1,
		},
		{
			name: "tolerated taint",
			spec: podSpec("1", "", func(s *corev1.PodSpec) {
				s.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
			}),
			nodes:    []*Node{free(node("gpu", nil, gpuTaint, true), 8000, 8, 110)},
			replicas: 8, eligible: 1,
		},
		{
			name: "node selector",
			spec: podSpec("1", "", func(s *corev1.PodSpec) { s.NodeSelector = zoneA }),
			nodes: []*Node{
				free(node("a", zoneA, nil, true), 2000, 8, 110),
				free(node("b", map[string]string{"zone": "b"}, nil, true), 8000, 8, 110),
			},
			replicas: 2, eligible: 1,
		},
		{
			name: "required node affinity",
			spec: podSpec("1", "", func(s *corev1.PodSpec) {
				s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a"}}}}},
				}}}
			}),
			nodes: []*Node{
				free(node("a", zoneA, nil, true), 2000, 8, 110),
				free(node("b", map[string]string{"zone": "b"}, nil, true), 3000, 8, 110),
			},
			replicas: 3, eligible: 1,
		},
		{
			name: "cordoned and not Ready nodes take nothing",
			spec: podSpec("1", ""),
			nodes: []*Node{
				free(cordoned, 8000, 8, 110),
				free(node("notready", nil, nil, false), 8000, 8, 110),
			},
			replicas: 0, eligible: 0, explain: "none of 2 nodes matches the pod's tolerations, node selector and affinity",
		},
		{
			name: "over-committed node counts as none, not negative",
			spec: podSpec("1", ""),
			nodes: []*Node{
				{Object: node("a", nil, nil, true), Alloc: Vector{CPU: 1000, Pods: 110 * PodAmount}, Used: Vector{CPU: 3000, Pods: PodAmount}},
				free(node("b", nil, nil, true), 2000, 1, 110),
			},
			replicas: 2, eligible: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewShape(tt.spec)
			res := Estimate(s, tt.nodes, nil)
			if res.Replicas != tt.replicas || res.Nodes != tt.eligible {
				t.Errorf("Estimate = %d replicas on %d eligible nodes, want %d on %d", res.Replicas, res.Nodes, tt.replicas, tt.eligible)
			}
			if tt.explain != "" && res.Explain() != tt.explain {
				t.Errorf("Explain = %q, want %q", res.Explain(), tt.explain)
			}
			// The eligibility cache gives the same answer.
			eligible := make([]bool, len(tt.nodes))
			for i, n := range tt.nodes {
				eligible[i] = s.Eligible(n.Object)
			}
			if again := Estimate(s, tt.nodes, eligible); again.Replicas != res.Replicas {
				t.Errorf("with cached eligibility: %d, without: %d", again.Replicas, res.Replicas)
			}
		})
	}
}

func TestShapeKeys(t *testing.T) {
	a := NewShape(podSpec("1", "1Gi"))
	b := NewShape(podSpec("1000m", "1024Mi"))
	if a.Key != b.Key {
		t.Errorf("equal requests written differently have keys %s and %s", a.Key, b.Key)
	}
	c := NewShape(podSpec("2", "1Gi"))
	if c.Key == a.Key || c.ConstraintsKey != a.ConstraintsKey {
		t.Errorf("other requests: key %s (vs %s), constraints %s (vs %s): want a new key, the same constraints", c.Key, a.Key, c.ConstraintsKey, a.ConstraintsKey)
	}
	d := NewShape(podSpec("1", "1Gi", func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"zone": "a"} }))
	if d.ConstraintsKey == a.ConstraintsKey || d.Key == a.Key {
		t.Errorf("a node selector must change both keys")
	}
	if got := NewShape(podSpec("1", "")).Requests; len(got) != 1 || got[0].Name != corev1.ResourceCPU || got[0].Amount != 1000 {
		t.Errorf("requests = %v, want cpu 1000", got)
	}
}

func TestVector(t *testing.T) {
	var v Vector
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods, "nvidia.com/gpu"} {
		v.Add(name, 7)
		if got := v.Get(name); got != 7 {
			t.Errorf("%s = %d after adding 7", name, got)
		}
		v.Add(name, -7)
		if got := v.Get(name); got != 0 {
			t.Errorf("%s = %d after taking it back", name, got)
		}
	}
	if len(v.Other) != 0 {
		t.Errorf("Other keeps zero entries: %v", v.Other)
	}
	if q := Quantity(corev1.ResourceMemory, 3<<30); !strings.HasPrefix(q.String(), "3Gi") {
		t.Errorf("memory quantity = %s", q.String())
	}
}

// TestTally checks that updating node by node gives what a full count
// gives, through pods coming and going on every node.
func TestTally(t *testing.T) {
	s := NewShape(podSpec("1", "1Gi"))
	nodes := []*Node{
		free(node("a", nil, nil, true), 4000, 8, 110),
		free(node("b", nil, nil, true), 8000, 4, 110),
		free(node("c", nil, []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}}, true), 64000, 64, 110),
		free(node("d", nil, nil, true), 2000, 2, 2),
	}
	eligible := make([]bool, len(nodes))
	for i, n := range nodes {
		eligible[i] = s.Eligible(n.Object)
	}
	tally := NewTally(s, nodes, eligible)
	steps := []struct {
		node       int
		cpu, memGi int64
	}{{0, 1000, 1}, {1, 3000, 1}, {1, -3000, -1}, {3, 1000, 2}, {0, 3000, 7}, {2, 1000, 1}, {1, 8000, 4}, {0, -4000, -8}, {3, -1000, -2}}
	for k, st := range steps {
		n := nodes[st.node]
		n.Used.CPU += st.cpu
		n.Used.Memory += st.memGi << 30
		n.Used.Pods += PodAmount * (st.cpu / max(abs(st.cpu), 1))
		if !tally.Update(s, nodes, eligible, st.node) {
			tally = NewTally(s, nodes, eligible)
		}
		want := Estimate(s, nodes, eligible)
		if tally.Replicas != want.Replicas || tally.Nodes != want.Nodes || tally.FreePods != want.FreePods {
			t.Fatalf("step %d: tally %d on %d nodes (%d slots), full count %d on %d (%d)", k, tally.Replicas, tally.Nodes, tally.FreePods, want.Replicas, want.Nodes, want.FreePods)
		}
		for j := range want.Largest {
			if max(want.Largest[j].Amount, 0) != tally.Largest[j].Amount {
				t.Fatalf("step %d: largest %s %d, full count %d", k, want.Largest[j].Name, tally.Largest[j].Amount, want.Largest[j].Amount)
			}
		}
	}
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// A template gets the requests its pods will get: a resource only limited
// is requested at its limit, per container and at the pod level.
func TestTemplateRequests(t *testing.T) {
	lim := func(pairs ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i+1 < len(pairs); i += 2 {
			l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
		}
		return l
	}
	tests := []struct {
		name string
		spec corev1.PodSpec
		want corev1.ResourceList
	}{
		{"requests", corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: lim("cpu", "1")}}}}, lim("cpu", "1")},
		{"limits only", corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Limits: lim("cpu", "2", "memory", "1Gi")}}}}, lim("cpu", "2", "memory", "1Gi")},
		{"a request below its limit stays", corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: lim("cpu", "500m"), Limits: lim("cpu", "2", "memory", "1Gi")}}}}, lim("cpu", "500m", "memory", "1Gi")},
		{"init container limits", corev1.PodSpec{
			InitContainers: []corev1.Container{{Resources: corev1.ResourceRequirements{Limits: lim("cpu", "4")}}},
			Containers:     []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: lim("cpu", "1")}}},
		}, lim("cpu", "4")},
		{"pod-level limits, containers request: their sum", corev1.PodSpec{
			Resources: &corev1.ResourceRequirements{Limits: lim("cpu", "4")},
			Containers: []corev1.Container{
				{Resources: corev1.ResourceRequirements{Requests: lim("cpu", "500m")}},
				{Resources: corev1.ResourceRequirements{Requests: lim("cpu", "500m")}},
			},
		}, lim("cpu", "1")},
		{"pod-level limits, no container request: the limit", corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Limits: lim("cpu", "3", "memory", "2Gi")},
			Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: lim("memory", "1Gi")}}},
		}, lim("cpu", "3", "memory", "1Gi")},
		{"pod-level hugepages limit: the limit, not the containers' sum", corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Limits: lim("hugepages-2Mi", "1Gi", "cpu", "2")},
			Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: lim("hugepages-2Mi", "256Mi", "cpu", "1")}}},
		}, lim("hugepages-2Mi", "1Gi", "cpu", "1")},
		{"pod-level limits, a container limit only: its request", corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Limits: lim("cpu", "3")},
			Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Limits: lim("cpu", "2")}}},
		}, lim("cpu", "2")},
		{"nothing", corev1.PodSpec{Containers: []corev1.Container{{}}}, corev1.ResourceList{}},
	}
	for _, tt := range tests {
		before := tt.spec.DeepCopy()
		got := TemplateRequests(&tt.spec)
		if len(got) != len(tt.want) {
			t.Errorf("%s: requests %v, want %v", tt.name, got, tt.want)
			continue
		}
		for name, q := range tt.want {
			if g, ok := got[name]; !ok || g.Cmp(q) != 0 {
				t.Errorf("%s: %s = %s, want %s", tt.name, name, g.String(), q.String())
			}
		}
		if !equality.Semantic.DeepEqual(before, &tt.spec) {
			t.Errorf("%s: the spec was modified", tt.name)
		}
	}
	// The shape of a limits-only template requests its limits.
	s := NewShape(&corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Limits: lim("cpu", "2")}}}})
	if len(s.Requests) != 1 || s.Requests[0].Amount != 2000 {
		t.Errorf("limits-only shape requests %+v, want cpu 2000", s.Requests)
	}
}

// Quantities too large for the sums saturate at MaxAmount.
func TestAmountSaturates(t *testing.T) {
	tests := []struct {
		name corev1.ResourceName
		q    string
		want int64
	}{
		{corev1.ResourceCPU, "1500m", 1500},
		{corev1.ResourceMemory, "1Gi", 1 << 30},
		{corev1.ResourceMemory, "100Ei", MaxAmount},
		{corev1.ResourceCPU, "100P", MaxAmount},
		{corev1.ResourceCPU, "9007199254740", 9007199254740000},
		{"example.com/dongle", "1e30", MaxAmount},
	}
	for _, tt := range tests {
		if got := Amount(tt.name, resource.MustParse(tt.q)); got != tt.want {
			t.Errorf("Amount(%s, %s) = %d, want %d", tt.name, tt.q, got, tt.want)
		}
	}
}
