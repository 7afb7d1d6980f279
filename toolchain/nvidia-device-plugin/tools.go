//go:build tools

// Package tools pins NVIDIA's device plugin, its config-manager and gpu-feature-discovery (github.com/NVIDIA/k8s-device-plugin),
// so `go mod tidy` keeps their dependencies in go.sum. toolchain/build.sh builds them with cgo.
package tools

import (
	_ "github.com/NVIDIA/k8s-device-plugin/cmd/config-manager"
	_ "github.com/NVIDIA/k8s-device-plugin/cmd/gpu-feature-discovery"
	_ "github.com/NVIDIA/k8s-device-plugin/cmd/nvidia-device-plugin"
)
