//go:build tools

// Package tools pins containerd 2.4.2, the third oracle for the merge judgment
// (2.3+ migrates each file to the current version before merging).
package tools

import _ "github.com/containerd/containerd/v2/cmd/containerd"
