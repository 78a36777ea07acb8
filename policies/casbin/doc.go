// Package casbin converts Argo CD RBAC policy (the casbin CSV of
// argocd-rbac-cm's policy.csv) into the default extension policy's data
// (data.gatehouse): `gatehouse policy import-casbin policy.csv`.
//
// Argo CD's extension proxy allows a call when its enforcer allows
// "applications, get, <project>/<application>" and "extensions, invoke,
// <extension>". The importer reproduces those two decisions: the lines that
// can grant or deny them become roles with applications and extensions
// grants, the g lines, policy.default and the empty subject become bindings.
// The imported policy never allows what Argo CD denies; where it denies what
// Argo CD allows, the report names the line. Every other line is listed with
// the reason it was left out; none is dropped silently.
package casbin
