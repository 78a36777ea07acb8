// Package source fetches PolicyBundles: from OCI registries (oras-go) and
// HTTP(S) servers, with credentials from a Secret, TLS options, size limits,
// sha256 pins and conditional requests, then reads, verifies, compiles and
// tests the bundle (pull). Every failure carries the condition reason a
// person acts on; no credential ever appears in an error.
package source
