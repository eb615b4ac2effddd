package interpreter

import (
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// SchemaOf returns the structural schema of a CRD's storage version (the
// version whose fields every served version maps to), or nil when that
// version has no schema.
func SchemaOf(crd *apiextensionsv1.CustomResourceDefinition) (*structuralschema.Structural, error) {
	for _, v := range crd.Spec.Versions {
		if !v.Storage {
			continue
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return nil, nil
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			return nil, fmt.Errorf("schema of %s %s: %w", crd.Name, v.Name, err)
		}
		s, err := structuralschema.NewStructural(&internal)
		if err != nil {
			return nil, fmt.Errorf("schema of %s %s is not structural: %w", crd.Name, v.Name, err)
		}
		return s, nil
	}
	return nil, nil
}

// objectType is the CEL type of the kind's objects: the schema's, with
// the metadata fields expressions may use (a CRD's own rules see only
// name and generateName).
func objectType(s *structuralschema.Structural) *apiservercel.DeclType {
	root := model.SchemaDeclType(openToDyn(s.DeepCopy()), true)
	if root == nil || !root.IsObject() {
		return nil
	}
	fields := make(map[string]*apiservercel.DeclField, len(root.Fields)+1)
	for name, f := range root.Fields {
		fields[name] = f
	}
	fields["metadata"] = apiservercel.NewDeclField("metadata", metadataType(), false, nil, nil)
	return apiservercel.NewObjectType("object", fields).MaybeAssignTypeName("flotilla.object")
}

// metadataType is the part of ObjectMeta expressions see. Times are
// strings, as in the JSON objects evaluation runs on.
func metadataType() *apiservercel.DeclType {
	str := func(n string) *apiservercel.DeclField {
		return apiservercel.NewDeclField(n, apiservercel.StringType, false, nil, nil)
	}
	strMap := func(n string) *apiservercel.DeclField {
		return apiservercel.NewDeclField(n, apiservercel.NewMapType(apiservercel.StringType, apiservercel.StringType, -1), false, nil, nil)
	}
	return apiservercel.NewObjectType("flotilla.metadata", map[string]*apiservercel.DeclField{
		"name":              str("name"),
		"generateName":      str("generateName"),
		"namespace":         str("namespace"),
		"uid":               str("uid"),
		"resourceVersion":   str("resourceVersion"),
		"creationTimestamp": str("creationTimestamp"),
		"deletionTimestamp": str("deletionTimestamp"),
		"labels":            strMap("labels"),
		"annotations":       strMap("annotations"),
		"generation":        apiservercel.NewDeclField("generation", apiservercel.IntType, false, nil, nil),
	})
}

// openToDyn makes every field the schema leaves open (no type, unknown
// fields preserved: a pod template a CRD does not describe) a dyn value,
// so that expressions may reach into it as evaluation will; CEL would
// otherwise hide such fields. It changes s in place and returns it.
func openToDyn(s *structuralschema.Structural) *structuralschema.Structural {
	if s == nil {
		return nil
	}
	if s.Type == "" && s.XPreserveUnknownFields && len(s.Properties) == 0 {
		s.XIntOrString = true // a dyn value for CEL's typing
		return s
	}
	for name, p := range s.Properties {
		s.Properties[name] = *openToDyn(&p)
	}
	if s.Items != nil {
		openToDyn(s.Items)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		openToDyn(s.AdditionalProperties.Structural)
	}
	return s
}

// integerOnly reports whether the field at p is a plain integer (not an
// int-or-string), as far as the schema says.
func integerOnly(s *structuralschema.Structural, p []string) bool {
	node := s
	for _, name := range p {
		prop, ok := node.Properties[name]
		if !ok {
			return false
		}
		node = &prop
	}
	return node.Type == "integer" && !node.XIntOrString
}

// checkPath checks that a field path exists in the schema and has the
// wanted shape ("integer", "number", "object", "collection", or "" for
// any). A field under an open part of the schema is not checked.
func checkPath(s *structuralschema.Structural, p []string, want string) error {
	node := s
	for _, name := range p {
		if node.Type == "" && (node.XPreserveUnknownFields || node.XIntOrString) {
			return nil
		}
		if prop, ok := node.Properties[name]; ok {
			node = &prop
			continue
		}
		if node.AdditionalProperties != nil && node.AdditionalProperties.Structural != nil {
			node = node.AdditionalProperties.Structural
			continue
		}
		if node.XPreserveUnknownFields || node.XEmbeddedResource && (name == "metadata" || name == "kind" || name == "apiVersion") {
			return nil
		}
		return fmt.Errorf("the kind's schema has no field %q here", name)
	}
	var ok bool
	switch want {
	case "integer":
		ok = node.Type == "integer"
	case "number":
		ok = node.Type == "integer" || node.Type == "number"
	case "generation": // an integer, or one written as a string
		ok = node.Type == "integer" || node.Type == "string"
	case "scalar":
		ok = node.Type == "integer" || node.Type == "number" || node.Type == "string"
	case "object":
		ok = node.Type == "object"
	case "collection":
		ok = node.Type == "object" || node.Type == "array"
	case "boolean":
		ok = node.Type == "boolean"
	case "intOrString": // written as an integer: a plain string field cannot take it
		ok = node.XIntOrString || node.Type == "integer"
	default:
		ok = true
	}
	if !ok && node.Type != "" && !node.XIntOrString {
		return fmt.Errorf("the kind's schema makes it a %s, not %s", node.Type, want)
	}
	return nil
}

// conditionsHave reports whether the schema's status.conditions items
// have a field.
func conditionsHave(s *structuralschema.Structural, field string) bool {
	status, ok := s.Properties["status"]
	if !ok {
		return false
	}
	conds, ok := status.Properties["conditions"]
	if !ok || conds.Items == nil {
		return false
	}
	_, ok = conds.Items.Properties[field]
	return ok
}
