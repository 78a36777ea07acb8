//go:build tools

// Package lint records the linter test/tools/install.sh builds, so that
// `go mod tidy` keeps its dependencies in go.sum.
package lint

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
