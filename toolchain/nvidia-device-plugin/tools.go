//go:build tools

// Package tools pins NVIDIA's device plugin and its config-manager (github.com/NVIDIA/k8s-device-plugin),
// so `go mod tidy` keeps their dependencies in go.sum. toolchain/build.sh builds them with cgo.
package tools

import (
	_ "github.com/NVIDIA/k8s-device-plugin/cmd/config-manager"
	_ "github.com/NVIDIA/k8s-device-plugin/cmd/nvidia-device-plugin"
)
