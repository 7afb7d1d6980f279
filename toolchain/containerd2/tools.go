// Pins containerd 2.x, built only as a second oracle for the merge model
// (`containerd --config F config dump` needs no daemon). See the Makefile, target oracle2.
//go:build tools

package tools

import _ "github.com/containerd/containerd/v2/cmd/containerd"
