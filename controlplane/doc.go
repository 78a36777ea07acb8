// Package controlplane owns turning cluster state into the snapshots the proxies serve: its sources
// (kube, yamldir), the bundle fetcher (source), the config checks the webhook shares (extconfig, policyconfig).
// It must never import agent, proxy, sidecar or webhook; only controlplane/kube links client-go; none gRPC.
//
// The root package holds the projected objects its sources feed it (Store), builds deterministic,
// versioned snapshots from them (Builder) and publishes them, debounced (Controller).
package controlplane
