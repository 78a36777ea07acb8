//go:build tools

// Package helm records the Helm command line test/tools/install.sh builds,
// so that `go mod tidy` keeps its dependencies in go.sum.
package helm

import _ "helm.sh/helm/v3/cmd/helm"
