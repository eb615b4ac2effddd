package override

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sjson "k8s.io/apimachinery/pkg/util/json"

	"github.com/flotilla-io/flotilla/api/v1alpha1"
)

// errPathNotFound says a JSON pointer does not lead to a value (or, for
// add, to a parent that can hold one).
var errPathNotFound = errors.New("path not found")

// applyJSONPatch applies one RFC 6902 add, remove or replace operation to
// obj. The path is checked against obj first, since the patch library
// accepts some paths RFC 6902 does not (replace of a missing object member,
// negative array indices).
func applyJSONPatch(obj *unstructured.Unstructured, op *v1alpha1.JSONPatchOperation) error {
	if err := checkJSONPatch(obj.Object, op); err != nil {
		return fmt.Errorf("%s %s: %w", op.Op, op.Path, err)
	}
	patch, err := patchOf(op)
	if err != nil {
		return fmt.Errorf("%s %s: %w", op.Op, op.Path, err)
	}
	doc, err := json.Marshal(obj.Object)
	if err != nil {
		return fmt.Errorf("%s %s: encode object: %w", op.Op, op.Path, err)
	}
	doc, err = patch.Apply(doc)
	if err != nil {
		return fmt.Errorf("%s %s: %w", op.Op, op.Path, err)
	}
	var out map[string]any
	if err := k8sjson.Unmarshal(doc, &out); err != nil {
		return fmt.Errorf("%s %s: decode patched object: %w", op.Op, op.Path, err)
	}
	obj.Object = out
	return nil
}

// patchOf turns an operation into a one-operation patch. The value's bytes
// are copied so the patch cannot alias the policy.
func patchOf(op *v1alpha1.JSONPatchOperation) (jsonpatch.Patch, error) {
	raw := func(v any) *json.RawMessage {
		b, _ := json.Marshal(v) // strings always encode
		m := json.RawMessage(b)
		return &m
	}
	o := jsonpatch.Operation{"op": raw(op.Op), "path": raw(op.Path)}
	if op.Op != "remove" {
		if op.Value == nil || len(op.Value.Raw) == 0 {
			return nil, errors.New("value is required")
		}
		if !json.Valid(op.Value.Raw) {
			return nil, errors.New("value is not valid JSON")
		}
		v := json.RawMessage(append([]byte(nil), op.Value.Raw...))
		o["value"] = &v
	}
	return jsonpatch.Patch{o}, nil
}

// checkJSONPatch checks that op is an add, remove or replace whose path
// leads to an existing value (remove, replace) or to an existing object or
// array that can take one (add), as RFC 6902 requires.
func checkJSONPatch(doc map[string]any, op *v1alpha1.JSONPatchOperation) error {
	switch op.Op {
	case "add", "remove", "replace":
	default:
		return fmt.Errorf("unsupported operation %q (want add, remove or replace)", op.Op)
	}
	tokens, err := parsePointer(op.Path)
	if err != nil {
		return err
	}
	if len(tokens) == 0 {
		return errors.New("the whole object cannot be patched")
	}
	var parent any = doc
	for _, tok := range tokens[:len(tokens)-1] {
		next, ok := child(parent, tok)
		if !ok {
			return errPathNotFound
		}
		parent = next
	}
	last := tokens[len(tokens)-1]
	switch p := parent.(type) {
	case map[string]any:
		if _, ok := p[last]; !ok && op.Op != "add" {
			return errPathNotFound
		}
	case []any:
		if last == "-" && op.Op == "add" {
			return nil
		}
		i, ok := arrayIndex(last)
		if !ok {
			return fmt.Errorf("invalid array index %q", last)
		}
		limit := len(p) // add may insert at the end
		if op.Op != "add" {
			limit--
		}
		if i > limit {
			return errPathNotFound
		}
	default:
		return errPathNotFound
	}
	return nil
}

// child returns the member tok of an object or the element tok of an array.
func child(v any, tok string) (any, bool) {
	switch c := v.(type) {
	case map[string]any:
		next, ok := c[tok]
		return next, ok
	case []any:
		i, ok := arrayIndex(tok)
		if !ok || i >= len(c) {
			return nil, false
		}
		return c[i], true
	}
	return nil, false
}

// arrayIndex parses an RFC 6901 array index: "0" or digits without a
// leading zero.
func arrayIndex(tok string) (int, bool) {
	if tok == "" || (len(tok) > 1 && tok[0] == '0') {
		return 0, false
	}
	for _, r := range tok {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(tok)
	if err != nil {
		return 0, false
	}
	return i, true
}

// parsePointer splits an RFC 6901 JSON pointer into its unescaped tokens.
// The empty pointer, meaning the whole document, has no tokens.
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("path %q is not a JSON pointer: it must start with '/'", p)
	}
	tokens := strings.Split(p[1:], "/")
	for i, tok := range tokens {
		for j := 0; j < len(tok); j++ {
			if tok[j] == '~' && (j+1 == len(tok) || (tok[j+1] != '0' && tok[j+1] != '1')) {
				return nil, fmt.Errorf("path %q has an invalid escape: '~' must be followed by 0 or 1", p)
			}
		}
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}
