//go:build tools

// Package cyclonedx records CycloneDX's SBOM generator for Go modules, which
// test/tools/install.sh builds for make release (one SBOM per binary), so
// that `go mod tidy` keeps its dependencies in go.sum.
package cyclonedx

import _ "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod"
