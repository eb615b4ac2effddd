package interpreters

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1alpha1 "github.com/flotilla-io/flotilla/api/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// WebhookPath is where the controller-manager's webhook server validates
// WorkloadInterpreters.
const WebhookPath = "/validate-flotilla-io-v1alpha1-workloadinterpreter"

// Validator refuses, at admission, a WorkloadInterpreter that does not
// compile, does not type-check against its kind's CRD (when the CRD is on
// the host) or may cost more than the budget: the same checks the loader
// makes, answered before anything is stored.
type Validator struct {
	// Reader reads the kind's CRD.
	Reader client.Reader
	// Mapper finds the kind's resource.
	Mapper meta.RESTMapper
}

// Webhook is the admission webhook of v.
func (v *Validator) Webhook(scheme *runtime.Scheme) *admission.Webhook {
	return admission.WithValidator[*v1alpha1.WorkloadInterpreter](scheme, v)
}

// ValidateCreate checks a new interpreter.
func (v *Validator) ValidateCreate(ctx context.Context, wi *v1alpha1.WorkloadInterpreter) (admission.Warnings, error) {
	return v.validate(ctx, wi)
}

// ValidateUpdate checks a changed interpreter; a change of status or
// metadata only is not checked again.
func (v *Validator) ValidateUpdate(ctx context.Context, old, wi *v1alpha1.WorkloadInterpreter) (admission.Warnings, error) {
	if old != nil && old.Generation == wi.Generation && old.Generation != 0 {
		return nil, nil
	}
	return v.validate(ctx, wi)
}

// ValidateDelete allows every deletion: the kind falls back to being
// propagated as it is.
func (v *Validator) ValidateDelete(context.Context, *v1alpha1.WorkloadInterpreter) (admission.Warnings, error) {
	return nil, nil
}

// validate compiles wi against its CRD's schema.
func (v *Validator) validate(ctx context.Context, wi *v1alpha1.WorkloadInterpreter) (admission.Warnings, error) {
	target := targetKind(wi)
	var warnings admission.Warnings
	s, crd, err := schemaOf(ctx, v.Reader, v.Mapper, target)
	switch {
	case err != nil:
		// Not knowing the schema is no reason to refuse: the loader
		// checks again once it can read it.
		warnings = append(warnings, fmt.Sprintf("not type-checked: %v", err))
	case crd == "":
		warnings = append(warnings, fmt.Sprintf("no CustomResourceDefinition of %s on the host: fields are checked when the CRD appears and when expressions run", target))
	}
	if _, errs := interpreter.Compile(&wi.Spec, interpreter.Options{Schema: s}); len(errs) > 0 {
		return warnings, apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind("WorkloadInterpreter").GroupKind(), wi.Name, errs)
	}
	return warnings, nil
}
