// Package casbindiff holds Gatehouse to Argo CD's own code where Argo CD
// decides: `gatehouse policy import-casbin` to its RBAC enforcer (what Argo
// CD's extension proxy denies, the imported policy denies, and where the
// import denies what Argo CD allows, its report says why), and namespace
// pattern lists and AppProject destinations to its glob matching, and
// controlplane/extconfig to its extension settings (argocd-cm read by its
// settings manager, then UpdateExtensionRegistry), and the headers and path
// a backend receives to its extension proxy's (CallExtension), and the
// status of every refused call to what argocd-server answers (its
// /extensions/ route and session middleware before CallExtension), each
// difference as docs/proxy.md states it. Argo CD's side runs in a separate
// process built from test/argocdref.
package casbindiff
