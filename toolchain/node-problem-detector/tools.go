//go:build tools

// Package tools pins node-problem-detector, so `go mod tidy` keeps its dependencies in go.sum.
package tools

import (
	_ "k8s.io/node-problem-detector/cmd/nodeproblemdetector"
)
