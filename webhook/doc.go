// Package webhook owns admission: the rules for Applications, AppProjects and Gatehouse's own
// configuration objects, the handler the API server calls, `gatehouse admit`, its certificate (certs).
// It must never import agent, proxy or sidecar, nor controlplane beyond the checks it shares; no gRPC.
//
// Gatehouse's own configuration objects are PolicyBundles, policy
// ConfigMaps, gatehouse-extensions and argocd-cm's extension config. The
// rules read a cluster view: the watch cache, or files for `admit`.
package webhook
