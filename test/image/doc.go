// Package image holds the Dockerfile, the Makefile and the manifests to one
// another (three images, each one static binary on distroless nonroot, the
// user the manifests run as), and checks binaries built as the Dockerfile
// builds them: `make image` runs it on them when no container engine works.
package image
