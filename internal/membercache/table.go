package membercache

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// table is how a kind prints in `kubectl get`: the columns kubectl users
// know for the kind, with a Cluster column naming the member.
type table struct {
	columns []metav1.TableColumnDefinition
	// cells returns one row's cells, in column order; cluster is the
	// member's name (HostCluster for the host's own events).
	cells func(obj runtime.Object, cluster string, now time.Time) []any
}

// HostCluster is what the Cluster column shows for an object of the host
// itself (the host's events).
const HostCluster = "<host>"

// Columns returns the kind's Table columns.
func (k *Kind) Columns() []metav1.TableColumnDefinition { return k.table.columns }

// Cells returns the Table cells of obj, an object of the kind.
func (k *Kind) Cells(obj runtime.Object, cluster string, now time.Time) []any {
	if cluster == "" {
		cluster = HostCluster
	}
	return k.table.cells(obj, cluster, now)
}

func col(name, typ, desc string, priority int32) metav1.TableColumnDefinition {
	format := ""
	if name == "Name" {
		format = "name"
	}
	return metav1.TableColumnDefinition{Name: name, Type: typ, Format: format, Description: desc, Priority: priority}
}

var clusterColumn = col("Cluster", "string", "The member cluster the object lives in.", 0)

// age prints how long ago t was, as kubectl does ("<unknown>" for zero).
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

var podTable = table{
	columns: []metav1.TableColumnDefinition{
		col("Name", "string", "Name of the pod.", 0),
		clusterColumn,
		col("Ready", "string", "Ready containers out of all containers.", 0),
		col("Status", "string", "The pod's status: its phase, or why it is not running.", 0),
		col("Restarts", "string", "Container restarts.", 0),
		col("Age", "string", "Time since the pod was created.", 0),
		col("IP", "string", "The pod's IP address.", 1),
		col("Node", "string", "The node the pod is bound to.", 1),
		col("Nominated Node", "string", "The node the scheduler nominated for a preemption.", 1),
		col("Readiness Gates", "string", "Readiness gates met out of all.", 1),
	},
	cells: func(o runtime.Object, cluster string, now time.Time) []any {
		p := o.(*corev1.Pod)
		ready, restarts := 0, 0
		for _, c := range p.Status.ContainerStatuses {
			if c.Ready {
				ready++
			}
			restarts += int(c.RestartCount)
		}
		for _, c := range p.Status.InitContainerStatuses {
			restarts += int(c.RestartCount)
		}
		gates := "<none>"
		if n := len(p.Spec.ReadinessGates); n > 0 {
			met := 0
			for _, g := range p.Spec.ReadinessGates {
				for _, c := range p.Status.Conditions {
					if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
						met++
					}
				}
			}
			gates = fmt.Sprintf("%d/%d", met, n)
		}
		return []any{p.Name, cluster, fmt.Sprintf("%d/%d", ready, len(p.Spec.Containers)), PodStatus(p),
			strconv.Itoa(restarts), age(p.CreationTimestamp, now), orNone(p.Status.PodIP),
			orNone(p.Spec.NodeName), orNone(p.Status.NominatedNodeName), gates}
	},
}

// PodStatus is the one word `kubectl get pods` shows for a pod: why an
// init or app container is not running, Terminating while it is deleted,
// otherwise its phase.
func PodStatus(p *corev1.Pod) string {
	status := string(p.Status.Phase)
	if p.Status.Reason != "" {
		status = p.Status.Reason
	}
	initializing := false
	for i, c := range p.Status.InitContainerStatuses {
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case c.State.Terminated != nil:
			status = "Init:" + terminatedReason(c.State.Terminated)
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			status = "Init:" + c.State.Waiting.Reason
		default:
			status = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing {
		running := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := p.Status.ContainerStatuses[i]
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				status = c.State.Waiting.Reason
			case c.State.Terminated != nil:
				status = terminatedReason(c.State.Terminated)
			case c.Ready && c.State.Running != nil:
				running = true
			}
		}
		if status == "Completed" && running {
			status = "Running"
		}
	}
	if p.DeletionTimestamp != nil {
		if p.Status.Reason == "NodeLost" {
			return "Unknown"
		}
		return "Terminating"
	}
	return status
}

func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

var nodeTable = table{
	columns: []metav1.TableColumnDefinition{
		col("Name", "string", "Name of the node.", 0),
		clusterColumn,
		col("Status", "string", "Ready or not, and whether scheduling is disabled.", 0),
		col("Roles", "string", "The node's roles (node-role.kubernetes.io labels).", 0),
		col("Age", "string", "Time since the node registered.", 0),
		col("Version", "string", "The kubelet's version.", 0),
		col("Internal-IP", "string", "The node's internal IP.", 1),
		col("External-IP", "string", "The node's external IP.", 1),
		col("OS-Image", "string", "The node's operating system image.", 1),
		col("Kernel-Version", "string", "The node's kernel.", 1),
		col("Container-Runtime", "string", "The node's container runtime.", 1),
	},
	cells: func(o runtime.Object, cluster string, now time.Time) []any {
		n := o.(*corev1.Node)
		status := "Unknown"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				status = "NotReady"
				if c.Status == corev1.ConditionTrue {
					status = "Ready"
				}
			}
		}
		if n.Spec.Unschedulable {
			status += ",SchedulingDisabled"
		}
		var roles []string
		for l := range n.Labels {
			if r, ok := strings.CutPrefix(l, "node-role.kubernetes.io/"); ok && r != "" {
				roles = append(roles, r)
			}
		}
		sort.Strings(roles)
		internal, external := "<none>", "<none>"
		for _, a := range n.Status.Addresses {
			switch a.Type {
			case corev1.NodeInternalIP:
				internal = a.Address
			case corev1.NodeExternalIP:
				external = a.Address
			}
		}
		i := n.Status.NodeInfo
		return []any{n.Name, cluster, status, orNone(strings.Join(roles, ",")), age(n.CreationTimestamp, now),
			i.KubeletVersion, internal, external, orUnknown(i.OSImage), orUnknown(i.KernelVersion), orUnknown(i.ContainerRuntimeVersion)}
	},
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

var eventTable = table{
	columns: []metav1.TableColumnDefinition{
		col("Last Seen", "string", "Time since the event was last seen.", 0),
		clusterColumn,
		col("Type", "string", "Normal or Warning.", 0),
		col("Reason", "string", "Why the event was recorded, in one word.", 0),
		col("Object", "string", "The object the event is about.", 0),
		col("Message", "string", "What happened.", 0),
		col("Source", "string", "The component that recorded the event.", 1),
		col("Count", "integer", "How often the event happened.", 1),
		col("Name", "string", "Name of the event.", 1),
	},
	cells: func(o runtime.Object, cluster string, now time.Time) []any {
		e := o.(*corev1.Event)
		last := e.LastTimestamp
		if last.IsZero() {
			last = metav1.NewTime(e.EventTime.Time)
		}
		if last.IsZero() {
			last = e.CreationTimestamp
		}
		source := e.Source.Component
		if source == "" {
			source = e.ReportingController
		}
		if e.Source.Host != "" {
			source += ", " + e.Source.Host
		}
		obj := strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name
		count := int64(e.Count)
		if count == 0 && e.Series != nil {
			count = int64(e.Series.Count)
		}
		return []any{age(last, now), cluster, e.Type, e.Reason, obj, strings.TrimSpace(e.Message), source, count, e.Name}
	},
}

var replicaSetTable = table{
	columns: []metav1.TableColumnDefinition{
		col("Name", "string", "Name of the replica set.", 0),
		clusterColumn,
		col("Desired", "integer", "Replicas wanted.", 0),
		col("Current", "integer", "Replicas created.", 0),
		col("Ready", "integer", "Replicas ready.", 0),
		col("Age", "string", "Time since the replica set was created.", 0),
		col("Containers", "string", "Container names.", 1),
		col("Images", "string", "Container images.", 1),
		col("Selector", "string", "The pod selector.", 1),
	},
	cells: func(o runtime.Object, cluster string, now time.Time) []any {
		rs := o.(*appsv1.ReplicaSet)
		desired := int64(1)
		if rs.Spec.Replicas != nil {
			desired = int64(*rs.Spec.Replicas)
		}
		names, images := containers(rs.Spec.Template.Spec.Containers)
		selector := "<none>"
		if s, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector); err == nil && !s.Empty() {
			selector = s.String()
		}
		return []any{rs.Name, cluster, desired, int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
			age(rs.CreationTimestamp, now), names, images, selector}
	},
}

func containers(cs []corev1.Container) (names, images string) {
	n, i := make([]string, len(cs)), make([]string, len(cs))
	for k, c := range cs {
		n[k], i[k] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

var endpointSliceTable = table{
	columns: []metav1.TableColumnDefinition{
		col("Name", "string", "Name of the endpoint slice.", 0),
		clusterColumn,
		col("AddressType", "string", "IPv4, IPv6 or FQDN.", 0),
		col("Ports", "string", "The ports of the endpoints.", 0),
		col("Endpoints", "string", "The first addresses.", 0),
		col("Age", "string", "Time since the slice was created.", 0),
	},
	cells: func(o runtime.Object, cluster string, now time.Time) []any {
		s := o.(*discoveryv1.EndpointSlice)
		ports := make([]string, 0, len(s.Ports))
		for _, p := range s.Ports {
			if p.Port != nil {
				ports = append(ports, strconv.Itoa(int(*p.Port)))
			}
		}
		var addrs []string
		total := 0
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				total++
				if len(addrs) < 3 {
					addrs = append(addrs, a)
				}
			}
		}
		endpoints := orNone(strings.Join(addrs, ","))
		if total > len(addrs) {
			endpoints += fmt.Sprintf(" + %d more...", total-len(addrs))
		}
		portStr := "<unset>"
		if len(ports) > 0 {
			portStr = strings.Join(ports, ",")
		}
		return []any{s.Name, cluster, string(s.AddressType), portStr, endpoints, age(s.CreationTimestamp, now)}
	},
}
