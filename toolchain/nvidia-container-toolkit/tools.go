//go:build tools

// Package tools pins NVIDIA's container runtime and nvidia-ctk (github.com/NVIDIA/nvidia-container-toolkit),
// so `go mod tidy` keeps their dependencies in go.sum. toolchain/build.sh builds them with cgo.
package tools

import (
	_ "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime"
	_ "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-ctk"
)
