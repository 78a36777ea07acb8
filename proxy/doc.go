// Package proxy owns the extension reverse proxy behind Argo CD's UI: authentication (authn), the
// policy input (authz), headers, limits, backends, streams and metrics, served from the snapshot volume.
// It must never import agent, controlplane or webhook, nor link k8s.io/, sigs.k8s.io/ or gRPC.
//
// It serves Argo CD UI extension traffic (/api/v1/extensions/<name>/… and
// Argo CD's /extensions/<name>/…) from the snapshot the agent writes to the
// shared volume. Each request is authenticated (authn), resolved against the
// snapshot's Applications, projects and clusters, decided by the policies
// engine on the input authz builds, held to rate and concurrency limits, and
// forwarded with goproxy to the service of the Application's destination
// cluster, with the header policy of package headers and per-extension
// timeouts, connection pools and TLS. Every snapshot becomes an immutable
// routing table, swapped whole; a snapshot that does not load is refused and
// the last good one keeps serving. It never talks to the Kubernetes API.
package proxy
