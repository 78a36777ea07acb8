// Package settings is Argo CD's configuration vocabulary and the settings
// Gatehouse must agree with. names.go is the one place Argo CD's names are
// spelled: its ConfigMaps and Secrets (argocd-cm, argocd-rbac-cm,
// argocd-secret, ...), their keys and the labels Argo CD selects by; every
// other package refers to these constants. settings.go reads the
// control-plane namespace, application.namespaces and the resource tracking
// method from argocd-cmd-params-cm and argocd-cm, with command-line
// overrides. It imports only internal/argocd/... and never a Kubernetes
// client.
package settings
