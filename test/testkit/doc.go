// Package testkit is what Gatehouse's test and benchmark packages share: a
// throwaway PKI, the cached Kubernetes test binaries, an in-process OCI
// registry, loopback helpers and process statistics. Only code under test/
// and *_test.go files import it.
package testkit
