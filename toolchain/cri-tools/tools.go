//go:build tools

// Package tools pins crictl, so `go mod tidy` keeps its dependencies in go.sum.
package tools

import (
	_ "sigs.k8s.io/cri-tools/cmd/crictl"
)
