//go:build tools

// Package kube records the commands test/tools/install.sh builds, so that
// `go mod tidy` keeps their dependencies in go.sum.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
