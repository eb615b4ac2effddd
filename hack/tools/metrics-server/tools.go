//go:build tools

// Package tools records metrics-server's main package, so that `go mod
// tidy` keeps its dependencies. It is a module of its own: metrics-server
// pins its Kubernetes libraries, which must not move the versions the
// components in hack/tools build with.
package tools

import (
	_ "sigs.k8s.io/metrics-server/cmd/metrics-server"
)
