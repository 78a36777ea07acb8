// Package snapshot owns the meaning of a Gatehouse snapshot's files: the schema of
// what the control plane publishes (extensions, application index, projects, clusters,
// authentication settings, policy, referenced secrets), its deterministic encoding into
// files, and the validating decoder the proxy loads it with. See docs/snapshot.md.
package snapshot
