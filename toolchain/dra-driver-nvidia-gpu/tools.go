//go:build tools

// Package tools pins NVIDIA's DRA kubelet plugin for GPUs (sigs.k8s.io/dra-driver-nvidia-gpu), so
// `go mod tidy` keeps its dependencies in go.sum. toolchain/build.sh builds it with cgo.
package tools

import (
	_ "sigs.k8s.io/dra-driver-nvidia-gpu/cmd/gpu-kubelet-plugin"
)
