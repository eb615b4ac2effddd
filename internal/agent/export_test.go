package agent

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// AskOnce asks the hub once for cluster's agent certificate with the
// bootstrap credential, as the agent does, and returns the outcome.
func AskOnce(ctx context.Context, cluster string, bootstrap *rest.Config) error {
	src := newCertSource(cluster, bootstrap, &memStore{}, 0)
	return src.renew(ctx, logr.Discard())
}

// ReplacePatch is replacePatch.
var ReplacePatch = replacePatch
