// Package casbindiff holds `gatehouse policy import-casbin` to Argo CD's own
// RBAC enforcer: for hand-written and random policies and requests, what
// Argo CD's extension proxy denies, the imported policy denies, and where
// the import denies what Argo CD allows, its report says why. Argo CD's
// side runs in a separate process built from test/argocdref.
package casbindiff
