package override

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

// containerLists are the pod spec fields whose containers overriders
// change. Ephemeral containers are left alone.
var containerLists = []string{"containers", "initContainers"}

// container is one entry of a pod spec's containers or initContainers.
type container struct {
	// list is the field the container is in, e.g. "initContainers".
	list string
	// index is the container's position in list.
	index int
	// name is the container's name.
	name string
	// fields are the container's fields, shared with the object.
	fields map[string]any
}

// String names the container for error messages.
func (c container) String() string {
	return fmt.Sprintf("%s[%d] %q", c.list, c.index, c.name)
}

// podSpecOf returns the pod spec found at path in obj, shared with obj, or
// nil when obj has none there.
func podSpecOf(obj *unstructured.Unstructured, path []string) (map[string]any, error) {
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
	if err != nil {
		return nil, fmt.Errorf("pod spec at %v: %w", path, err)
	}
	if !found || v == nil {
		return nil, nil
	}
	pod, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("pod spec at %v is a %T, not an object", path, v)
	}
	return pod, nil
}

// containersOf returns the containers and then the init containers of a pod
// spec (nil for none).
func containersOf(pod map[string]any) ([]container, error) {
	var out []container
	for _, list := range containerLists {
		v, ok := pod[list]
		if !ok || v == nil {
			continue
		}
		items, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s is a %T, not a list", list, v)
		}
		for i, item := range items {
			fields, ok := item.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s[%d] is a %T, not an object", list, i, item)
			}
			name, _ := fields["name"].(string)
			out = append(out, container{list: list, index: i, name: name, fields: fields})
		}
	}
	return out, nil
}

// selected reports whether a container is one of names; empty names select
// every container.
func selected(c container, names []string) bool {
	return len(names) == 0 || slices.Contains(names, c.name)
}

// applyStringList applies a command or args overrider (field is "command"
// or "args") to the named container.
func applyStringList(pod map[string]any, field string, ov *v1alpha1.CommandOverrider) error {
	op := ov.Operator
	if op == "" {
		op = v1alpha1.ListReplace
	}
	if op != v1alpha1.ListReplace && op != v1alpha1.ListAppend {
		return fmt.Errorf("unknown operator %q (want %s or %s)", op, v1alpha1.ListReplace, v1alpha1.ListAppend)
	}
	var cs []container
	if pod != nil {
		var err error
		if cs, err = containersOf(pod); err != nil {
			return err
		}
	}
	matched := false
	for _, c := range cs {
		if c.name != ov.ContainerName {
			continue
		}
		matched = true
		var list []any
		if op == v1alpha1.ListAppend {
			if v, ok := c.fields[field]; ok && v != nil {
				old, ok := v.([]any)
				if !ok {
					return fmt.Errorf("container %s: %s is a %T, not a list", c, field, v)
				}
				list = slices.Clone(old)
			}
		}
		for _, s := range ov.Values {
			list = append(list, s)
		}
		if len(list) == 0 {
			// An empty list means the same as none; the API server
			// drops it, so do the same.
			delete(c.fields, field)
			continue
		}
		c.fields[field] = list
	}
	if !matched {
		return fmt.Errorf("container %q not found in containers or initContainers", ov.ContainerName)
	}
	return nil
}

// applyEnv applies an env overrider: Set, then Remove, on each selected
// container.
func applyEnv(pod map[string]any, ov *v1alpha1.EnvOverrider) error {
	if pod == nil {
		return nil
	}
	cs, err := containersOf(pod)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if !selected(c, ov.ContainerNames) {
			continue
		}
		if err := setEnv(c, ov.Set, ov.Remove); err != nil {
			return err
		}
	}
	return nil
}

// setEnv sets and then removes environment variables of one container.
// A variable set keeps the position of an existing one of the same name
// (and loses its valueFrom); new ones are appended in order.
func setEnv(c container, set []v1alpha1.EnvVar, remove []string) error {
	if len(set) == 0 && len(remove) == 0 {
		return nil
	}
	var env []any
	if v, ok := c.fields["env"]; ok && v != nil {
		old, ok := v.([]any)
		if !ok {
			return fmt.Errorf("container %s: env is a %T, not a list", c, v)
		}
		env = slices.Clone(old)
	}
	for _, e := range set {
		entry := map[string]any{"name": e.Name}
		if e.Value != "" {
			entry["value"] = e.Value
		}
		replaced := false
		for i, item := range env {
			if envName(item) == e.Name {
				// Each occurrence gets its own map so later changes to
				// one do not show in another.
				env[i] = maps.Clone(entry)
				replaced = true
			}
		}
		if !replaced {
			env = append(env, entry)
		}
	}
	if len(remove) > 0 {
		env = slices.DeleteFunc(env, func(item any) bool {
			return slices.Contains(remove, envName(item))
		})
	}
	if len(env) == 0 {
		delete(c.fields, "env")
		return nil
	}
	c.fields["env"] = env
	return nil
}

// envName returns the name of an env entry, or "" when it has none.
func envName(item any) string {
	m, ok := item.(map[string]any)
	if !ok {
		return ""
	}
	name, _ := m["name"].(string)
	return name
}
