//go:build tools

// Package codegen records the generator commands this module pins.
package codegen

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
