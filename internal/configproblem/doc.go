// Package configproblem is the one type for a fault in the cluster's
// configuration that a person must fix: the extension config
// (controlplane/extconfig), the policy config (controlplane/policyconfig),
// the rest of the control plane's build, the admission webhook and the
// Events on the object at fault all find, pass and report the same
// Problem, with no conversion on the way.
//
// It links only the standard library and must never import anything of
// ours: every one of those packages imports it. The names problems carry
// (object names, reasons) are internal/argocd/settings' and api/v1alpha1's.
package configproblem
