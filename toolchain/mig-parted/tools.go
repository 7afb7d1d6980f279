//go:build tools

// Package tools pins NVIDIA's nvidia-mig-parted (github.com/NVIDIA/mig-parted), so `go mod tidy`
// keeps its dependencies in go.sum. toolchain/build.sh builds it with cgo, on demand only.
package tools

import (
	_ "github.com/NVIDIA/mig-parted/cmd/nvidia-mig-parted"
)
