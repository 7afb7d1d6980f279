//go:build tools

// Package tools pins NVIDIA's container runtime, nvidia-ctk, nvidia-cdi-hook and the toolkit's installer
// (nvidia-ctk-installer, the GPU Operator's toolkit DaemonSet's program) of github.com/NVIDIA/nvidia-container-toolkit,
// so `go mod tidy` keeps their dependencies in go.sum. toolchain/build.sh builds them with cgo.
package tools

import (
	_ "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-cdi-hook"
	_ "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime"
	_ "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime-hook"
	_ "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime.cdi"
	_ "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime.legacy"
	_ "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-ctk"
	_ "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-ctk-installer"
)
