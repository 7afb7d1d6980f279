//go:build tools

// Package tools pins node-feature-discovery's nfd-master, so `go mod tidy` keeps its
// dependencies in go.sum. toolchain/build.sh builds it (CGO off, as upstream's image).
package tools

import (
	_ "sigs.k8s.io/node-feature-discovery/cmd/nfd-master"
)
