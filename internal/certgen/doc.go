// Package certgen owns making X.509 certificates: a CA, a leaf signed by it
// with the names, usages and lifetime asked for, both ECDSA P-256 and
// PEM-encoded, and reading such a pair back. The webhook's certificate
// rotator, `gatehouse dev` and the tests' throwaway PKI all make theirs here.
// It must never import anything outside Go's standard library: it holds keys.
package certgen
