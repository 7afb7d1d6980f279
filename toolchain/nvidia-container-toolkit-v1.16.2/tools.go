//go:build tools

// Package tools pins NVIDIA Container Toolkit v1.16.2's installer - its toolkit image's programs: nvidia-toolkit (the entrypoint), which runs `toolkit install` and `containerd setup` (tools/container/toolkit, tools/container/containerd) by name - so `go mod tidy`
// keeps their dependencies in go.sum. toolchain/build.sh builds them.
package tools

import (
	_ "github.com/NVIDIA/nvidia-container-toolkit/tools/container/containerd"
	_ "github.com/NVIDIA/nvidia-container-toolkit/tools/container/nvidia-toolkit"
	_ "github.com/NVIDIA/nvidia-container-toolkit/tools/container/toolkit"
)
