package member

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// Reasons of observations, used as condition reasons and event reasons.
const (
	ReasonReady               = "ClusterReady"
	ReasonUnreachable         = "ClusterUnreachable"
	ReasonAPIServerNotReady   = "APIServerNotReady"
	ReasonUnauthorized        = "Unauthorized"
	ReasonForbidden           = "Forbidden"
	ReasonSecretNotFound      = "SecretNotFound"
	ReasonInvalidCredentials  = "InvalidCredentials"
	ReasonSyncModeUnsupported = "SyncModeUnsupported"
)

// Probe asks the member's apiserver for /readyz within timeout and
// classifies the answer.
func Probe(ctx context.Context, client rest.Interface, timeout time.Duration, now func() time.Time) Observation {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var status int
	body, err := client.Get().AbsPath("/readyz").Do(ctx).StatusCode(&status).Raw()
	return Classify(status, body, err, now())
}

// Classify turns the outcome of a /readyz request into an observation.
func Classify(status int, body []byte, err error, at time.Time) Observation {
	o := Observation{At: at}
	switch {
	case err == nil && status == http.StatusOK:
		o.Health, o.Reason, o.Message = Healthy, ReasonReady, "the member's apiserver is ready and accepts the credentials"
	case apierrors.IsUnauthorized(err):
		o.Health, o.Reason = NotReady, ReasonUnauthorized
		o.Message = "the member's apiserver refuses the credentials (401): check the token or client certificate in the Secret"
	case apierrors.IsForbidden(err):
		o.Health, o.Reason = NotReady, ReasonForbidden
		o.Message = "the credentials may not read /readyz (403): grant the ServiceAccount the flotilla member role"
	case status != 0:
		o.Health, o.Reason = NotReady, ReasonAPIServerNotReady
		o.Message = fmt.Sprintf("/readyz answered %d: %s", status, firstLines(body, err))
	default:
		o.Health, o.Reason = Unreachable, ReasonUnreachable
		o.Message = "cannot contact the member's apiserver: " + describeNetError(err)
	}
	return o
}

// describeNetError reduces a transport error to its cause, dropping the
// request URL that client-go repeats.
func describeNetError(err error) string {
	if err == nil {
		return "no answer"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return "timed out waiting for an answer"
	default:
		return err.Error()
	}
}

func firstLines(body []byte, err error) string {
	s := strings.TrimSpace(string(body))
	if s == "" && err != nil {
		s = err.Error()
	}
	// readyz lists every check; the failed ones are the lines with "failed".
	var failed []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, "failed") {
			failed = append(failed, strings.TrimSpace(line))
		}
	}
	if len(failed) > 0 {
		s = strings.Join(failed, "; ")
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
