package membercache

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Kind is a member kind the cache can hold: how to watch it in a member,
// which fields its field selectors may name, and how its Table prints.
type Kind struct {
	// Resource is the kind's resource (pods, events, ...).
	Resource schema.GroupVersionResource
	// Kind and ListKind name the object and its list (Pod, PodList).
	Kind, ListKind string
	// Namespaced is false for cluster-scoped kinds (nodes).
	Namespaced bool

	newObject func() runtime.Object
	client    func(kubernetes.Interface) rest.Interface
	// fields returns what field selectors may name besides metadata.name
	// and metadata.namespace; the keys are the selector's field labels.
	fields func(runtime.Object) fields.Set
	table  table
}

// GroupResource is the kind's group and resource.
func (k *Kind) GroupResource() schema.GroupResource { return k.Resource.GroupResource() }

// NewObject returns an empty object of the kind.
func (k *Kind) NewObject() runtime.Object { return k.newObject() }

// FieldLabels lists the field selector labels the kind supports.
func (k *Kind) FieldLabels() []string {
	set := fieldSet(k, k.newObject(), "", "")
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// fieldSet is every field a selector may name for obj.
func fieldSet(k *Kind, obj runtime.Object, namespace, name string) fields.Set {
	set := fields.Set{"metadata.name": name}
	if k.Namespaced {
		set["metadata.namespace"] = namespace
	}
	if k.fields != nil {
		for f, v := range k.fields(obj) {
			set[f] = v
		}
	}
	return set
}

// kinds are the kinds the cache knows, by group and resource.
var kinds = map[schema.GroupResource]*Kind{}

func register(k *Kind) { kinds[k.GroupResource()] = k }

func init() {
	register(&Kind{
		Resource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", ListKind: "PodList", Namespaced: true,
		newObject: func() runtime.Object { return &corev1.Pod{} },
		client:    func(c kubernetes.Interface) rest.Interface { return c.CoreV1().RESTClient() },
		fields: func(o runtime.Object) fields.Set {
			p := o.(*corev1.Pod)
			return fields.Set{
				"spec.nodeName":            p.Spec.NodeName,
				"spec.restartPolicy":       string(p.Spec.RestartPolicy),
				"spec.schedulerName":       p.Spec.SchedulerName,
				"spec.serviceAccountName":  p.Spec.ServiceAccountName,
				"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
				"status.phase":             string(p.Status.Phase),
				"status.podIP":             p.Status.PodIP,
				"status.nominatedNodeName": p.Status.NominatedNodeName,
			}
		},
		table: podTable,
	})
	register(&Kind{
		Resource: corev1.SchemeGroupVersion.WithResource("events"), Kind: "Event", ListKind: "EventList", Namespaced: true,
		newObject: func() runtime.Object { return &corev1.Event{} },
		client:    func(c kubernetes.Interface) rest.Interface { return c.CoreV1().RESTClient() },
		fields: func(o runtime.Object) fields.Set {
			e := o.(*corev1.Event)
			return fields.Set{
				"involvedObject.kind":            e.InvolvedObject.Kind,
				"involvedObject.namespace":       e.InvolvedObject.Namespace,
				"involvedObject.name":            e.InvolvedObject.Name,
				"involvedObject.uid":             string(e.InvolvedObject.UID),
				"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
				"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
				"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
				"reason":                         e.Reason,
				"reportingComponent":             e.ReportingController,
				"source":                         e.Source.Component,
				"type":                           e.Type,
			}
		},
		table: eventTable,
	})
	register(&Kind{
		Resource: corev1.SchemeGroupVersion.WithResource("nodes"), Kind: "Node", ListKind: "NodeList",
		newObject: func() runtime.Object { return &corev1.Node{} },
		client:    func(c kubernetes.Interface) rest.Interface { return c.CoreV1().RESTClient() },
		fields: func(o runtime.Object) fields.Set {
			return fields.Set{"spec.unschedulable": strconv.FormatBool(o.(*corev1.Node).Spec.Unschedulable)}
		},
		table: nodeTable,
	})
	register(&Kind{
		Resource: appsv1.SchemeGroupVersion.WithResource("replicasets"), Kind: "ReplicaSet", ListKind: "ReplicaSetList", Namespaced: true,
		newObject: func() runtime.Object { return &appsv1.ReplicaSet{} },
		client:    func(c kubernetes.Interface) rest.Interface { return c.AppsV1().RESTClient() },
		fields: func(o runtime.Object) fields.Set {
			return fields.Set{"status.replicas": strconv.Itoa(int(o.(*appsv1.ReplicaSet).Status.Replicas))}
		},
		table: replicaSetTable,
	})
	register(&Kind{
		Resource: discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), Kind: "EndpointSlice", ListKind: "EndpointSliceList", Namespaced: true,
		newObject: func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		client:    func(c kubernetes.Interface) rest.Interface { return c.DiscoveryV1().RESTClient() },
		fields: func(o runtime.Object) fields.Set {
			return fields.Set{"addressType": string(o.(*discoveryv1.EndpointSlice).AddressType)}
		},
		table: endpointSliceTable,
	})
}

// DefaultKinds are the kinds the gateway serves from members unless told
// otherwise (--member-kinds).
var DefaultKinds = []string{"pods", "events", "nodes", "endpointslices.discovery.k8s.io", "replicasets.apps"}

// ParseKinds resolves names such as "pods" or "replicasets.apps" to kinds.
func ParseKinds(names []string) ([]*Kind, error) {
	var out []*Kind
	seen := map[schema.GroupResource]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		gr := schema.ParseGroupResource(n)
		k, ok := kinds[gr]
		if !ok {
			return nil, fmt.Errorf("member kind %q is not one the gateway can serve from members; known: %s", n, strings.Join(KnownKinds(), ", "))
		}
		if !seen[gr] {
			seen[gr] = true
			out = append(out, k)
		}
	}
	return out, nil
}

// KnownKinds names every kind the cache can hold.
func KnownKinds() []string {
	out := make([]string, 0, len(kinds))
	for gr := range kinds {
		out = append(out, gr.String())
	}
	sort.Strings(out)
	return out
}
