package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"
)

// A pod deletion goes to the member with the control plane's credential,
// which the member authorizes, not the user: an option the member checks
// with a verb of its own must not ride along. The one there is,
// ignoreStoreReadErrorWithClusterBreakingPotential (the member then asks
// for "unsafe-delete-ignore-read-errors", which the control plane holds
// and the user need not), is refused.

// maxDeleteBody bounds the DeleteOptions body the gateway reads.
const maxDeleteBody = 1 << 20

// checkDeleteOptions refuses a delete whose options ask for what the
// member would authorize against the control plane's identity; r's body
// is left readable for the member.
func checkDeleteOptions(r *http.Request, name string) error {
	gr := corev1.Resource("pods")
	var opts metav1.DeleteOptions
	if err := metainternalscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if err := refuseUnsafe(&opts, gr, name); err != nil {
		return err
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxDeleteBody+1))
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("read the DeleteOptions: %v", err))
	}
	if len(body) > maxDeleteBody {
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("DeleteOptions of more than %d bytes", maxDeleteBody))
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	opts = metav1.DeleteOptions{}
	def := schema.GroupVersionKind{Version: "v1", Kind: "DeleteOptions"}
	if _, _, err := codecs.UniversalDeserializer().Decode(body, &def, &opts); err != nil {
		// Another apiVersion (meta.k8s.io/v1) in JSON reads as well, as
		// the member reads it: field names matched case-sensitively (Go's
		// encoding/json would take "IgnoreStoreReadError..." for the
		// option the member ignores). A field given twice is refused: the
		// member keeps the last, and the gateway need not guess.
		opts = metav1.DeleteOptions{}
		strict, jerr := kjson.UnmarshalStrict(body, &opts, kjson.DisallowDuplicateFields)
		if jerr != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("the body is not DeleteOptions: %v", err))
		}
		if len(strict) > 0 {
			return apierrors.NewBadRequest(fmt.Sprintf("the DeleteOptions: %v", strict[0]))
		}
	}
	return refuseUnsafe(&opts, gr, name)
}

// refuseUnsafe refuses options that ask to ignore read errors.
func refuseUnsafe(opts *metav1.DeleteOptions, gr schema.GroupResource, name string) error {
	if opts.IgnoreStoreReadErrorWithClusterBreakingPotential != nil && *opts.IgnoreStoreReadErrorWithClusterBreakingPotential {
		return apierrors.NewForbidden(gr, name, fmt.Errorf("the gateway does not carry ignoreStoreReadErrorWithClusterBreakingPotential to a member (it would be authorized as the control plane): delete a corrupt object on the member itself"))
	}
	return nil
}
