// Package arch checks the dependency rules of ARCHITECTURE.md: packages
// that run without Kubernetes credentials never link a Kubernetes client,
// and nothing imports cmd/.
package arch
