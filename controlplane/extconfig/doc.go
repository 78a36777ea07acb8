// Package extconfig turns proxy extension settings (argocd-cm and gatehouse-extensions, in Argo CD's, the proposal's and Gatehouse's formats) into validated snapshot.Extension values.
// Each extension stands alone: a bad one is dropped with a Problem and the others are still served, where Argo CD would drop them all.
// A definition in gatehouse-extensions replaces argocd-cm's of the same name, silently, even when it is disabled or invalid (never falling back); in argocd-cm it never serves what Argo CD v3.5.0 would not (test/casbindiff holds it to Argo CD's code); docs/configuration.md lists where it is stricter.
package extconfig
