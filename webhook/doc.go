// Package webhook owns Gatehouse's admission rules for Argo CD Applications
// and AppProjects, and for Gatehouse's own configuration objects
// (PolicyBundles, policy ConfigMaps, gatehouse-extensions, argocd-cm's
// extension config), the HTTP handler that serves them to the API server,
// and the cluster views the rules read (watch cache, or files for `admit`).
package webhook
