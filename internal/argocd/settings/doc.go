// Package settings reads the Argo CD settings Gatehouse must agree with
// (control-plane namespace, application.namespaces, resource tracking method)
// from argocd-cmd-params-cm and argocd-cm, with command-line overrides.
package settings
