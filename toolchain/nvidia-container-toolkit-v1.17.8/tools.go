//go:build tools

// Package tools pins NVIDIA Container Toolkit v1.17.8's installer - its toolkit image's entrypoint, nvidia-toolkit (tools/container/nvidia-toolkit: the toolkit's install and the runtime's setup in one program) - so `go mod tidy`
// keeps their dependencies in go.sum. toolchain/build.sh builds them.
package tools

import (
	_ "github.com/NVIDIA/nvidia-container-toolkit/tools/container/nvidia-toolkit"
)
