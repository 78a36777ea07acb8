// Package test owns what proves Gatehouse works: end-to-end, contract, fault, revocation and
// architecture tests, benchmarks, reference modules of Argo CD and OPA, and the tools they install.
// The product must never import it; only other tests may use its testkit.
package test
