// Package upstreamcrds names the upstream API packages whose CRDs `make
// generate` writes (see go.mod).
package upstreamcrds

import (
	// Argo Rollouts: Rollout.
	_ "github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
)
