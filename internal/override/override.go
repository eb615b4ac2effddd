package override

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/workload"
)

// Source is one rule's overriders and where they come from, for error messages.
type Source struct {
	// Policy names the policy, e.g. "ClusterOverridePolicy/prod" or "OverridePolicy/web/eu".
	Policy string
	// Rule is the index of the rule in the policy.
	Rule int
	// Overriders are the rule's changes.
	Overriders v1alpha1.Overriders
	// Namespaced is true for a namespace's OverridePolicy: it may change
	// only the metadata of an RBAC object (see Apply).
	Namespaced bool
	// Unreadable, when set, says why the policy cannot tell whether it
	// applies (a label selector that does not parse): Apply fails with
	// it, so that the copy keeps the overrides it has rather than losing
	// them in silence. Rule is -1 when the policy's resource selectors
	// are the ones at fault.
	Unreadable string
}

// name names the source for error messages, e.g. "OverridePolicy/web/eu rule 0".
func (s Source) name() string {
	if s.Rule < 0 {
		return s.Policy
	}
	return fmt.Sprintf("%s rule %d", s.Policy, s.Rule)
}

// Apply applies the sources, in order, to obj (modified in place). Within a
// source the overriders apply in the order image, command, args, env, labels,
// annotations, jsonPatch. It returns an error naming the policy, rule and
// overrider when one cannot apply (a JSON patch whose path does not exist, a
// command override for a container that does not exist, an image that cannot be parsed),
// and refuses any change to apiVersion, kind, metadata.name or metadata.namespace
// (checked after all sources applied, whatever changed them).
//
// A namespace's OverridePolicy (Source.Namespaced) may change only the
// metadata of an RBAC object (Role, RoleBinding: rbac.authorization.k8s.io):
// the host's RBAC checked that its author may grant what the template
// grants, but a member checks a change to rules, roleRef or subjects
// against Flotilla's identity, which may grant anything. A
// ClusterOverridePolicy, written by a cluster admin, may change them.
//
// Image, command, args and env overriders do nothing on an object whose kind
// has no pod spec (see workload.PodSpecPath). The work is done on a copy:
// when Apply returns an error, obj is left unchanged. The sources are only
// read.
func Apply(obj *unstructured.Unstructured, sources []Source) error {
	work := obj.DeepCopy()
	before := identityOf(work)
	var firstChange map[string]string // identity field -> source that first changed it
	for _, src := range sources {
		if src.Unreadable != "" {
			return fmt.Errorf("%s: %s; the copy keeps what it has until the policy is fixed", src.name(), src.Unreadable)
		}
		var grants map[string]any
		if src.Namespaced {
			grants = grantsOf(work)
		}
		if err := applySource(work, &src); err != nil {
			return err
		}
		if grants != nil && !reflect.DeepEqual(grants, grantsOf(work)) {
			return fmt.Errorf("%s changes what %s %s/%s grants: a namespace's OverridePolicy may change only the metadata of an RBAC object (the host's RBAC checked the template's grants, and a member would not check the change); a ClusterOverridePolicy may change it",
				src.name(), work.GetKind(), work.GetNamespace(), work.GetName())
		}
		for _, field := range before.changedFields(identityOf(work)) {
			if firstChange == nil {
				firstChange = map[string]string{}
			}
			if _, seen := firstChange[field]; !seen {
				firstChange[field] = src.name()
			}
		}
	}
	after := identityOf(work)
	if changed := before.changedFields(after); len(changed) > 0 {
		field := changed[0]
		by := firstChange[field]
		if by == "" {
			by = "an override"
		}
		return fmt.Errorf("overrides change %s from %s to %s (first changed by %s): the object's identity cannot be overridden",
			field, before.describe(field), after.describe(field), by)
	}
	obj.Object = work.Object
	return nil
}

// applySource applies one rule's overriders in their fixed order.
func applySource(obj *unstructured.Unstructured, src *Source) error {
	name := src.name()
	ov := &src.Overriders
	if path := workload.PodSpecPath(obj); path != nil {
		pod, err := podSpecOf(obj, path)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for i := range ov.Image {
			if err := applyImage(pod, &ov.Image[i]); err != nil {
				return fmt.Errorf("%s image[%d]: %w", name, i, err)
			}
		}
		for i := range ov.Command {
			if err := applyStringList(pod, "command", &ov.Command[i]); err != nil {
				return fmt.Errorf("%s command[%d]: %w", name, i, err)
			}
		}
		for i := range ov.Args {
			if err := applyStringList(pod, "args", &ov.Args[i]); err != nil {
				return fmt.Errorf("%s args[%d]: %w", name, i, err)
			}
		}
		for i := range ov.Env {
			if err := applyEnv(pod, &ov.Env[i]); err != nil {
				return fmt.Errorf("%s env[%d]: %w", name, i, err)
			}
		}
	}
	if ov.Labels != nil {
		if err := applyMetadataMap(obj, "labels", ov.Labels); err != nil {
			return fmt.Errorf("%s labels: %w", name, err)
		}
	}
	if ov.Annotations != nil {
		if err := applyMetadataMap(obj, "annotations", ov.Annotations); err != nil {
			return fmt.Errorf("%s annotations: %w", name, err)
		}
	}
	for i := range ov.JSONPatch {
		if err := applyJSONPatch(obj, &ov.JSONPatch[i]); err != nil {
			return fmt.Errorf("%s jsonPatch[%d]: %w", name, i, err)
		}
	}
	return nil
}

// rbacGroup is the API group of the objects that grant permissions.
const rbacGroup = "rbac.authorization.k8s.io"

// grantsOf is a copy of what an RBAC object grants: everything but its
// metadata (rules, aggregationRule, roleRef, subjects). It is nil for
// any other kind.
func grantsOf(obj *unstructured.Unstructured) map[string]any {
	if obj.GroupVersionKind().Group != rbacGroup {
		return nil
	}
	out := make(map[string]any, len(obj.Object))
	for k, v := range obj.Object {
		if k != "metadata" {
			out[k] = runtime.DeepCopyJSONValue(v)
		}
	}
	return out
}

// identityFields are the fields that identify an object, as dotted paths.
var identityFields = [][]string{
	{"apiVersion"},
	{"kind"},
	{"metadata", "name"},
	{"metadata", "namespace"},
}

// identityValue is the value of one identity field, or its absence.
type identityValue struct {
	found bool
	value any
}

// identity is a snapshot of an object's identity fields, in the order of
// identityFields.
type identity []identityValue

// identityOf takes a snapshot of obj's identity fields.
func identityOf(obj *unstructured.Unstructured) identity {
	id := make(identity, len(identityFields))
	for i, f := range identityFields {
		v, found, err := unstructured.NestedFieldNoCopy(obj.Object, f...)
		if err != nil {
			// A field on the way is not a map, e.g. metadata became a
			// string: record that as a distinct value.
			id[i] = identityValue{found: true, value: fmt.Sprintf("<invalid: %v>", err)}
			continue
		}
		id[i] = identityValue{found: found, value: v}
	}
	return id
}

// changedFields returns the dotted names of the fields whose value differs
// between id and other.
func (id identity) changedFields(other identity) []string {
	var changed []string
	for i, f := range identityFields {
		a, b := id[i], other[i]
		if a.found != b.found || !reflect.DeepEqual(a.value, b.value) {
			changed = append(changed, strings.Join(f, "."))
		}
	}
	return changed
}

// describe renders the value of a field (named as changedFields names it)
// for an error message.
func (id identity) describe(field string) string {
	for i, f := range identityFields {
		if strings.Join(f, ".") != field {
			continue
		}
		if !id[i].found {
			return "<unset>"
		}
		if s, ok := id[i].value.(string); ok {
			return fmt.Sprintf("%q", s)
		}
		return fmt.Sprintf("%v", id[i].value)
	}
	return "<unknown>"
}
