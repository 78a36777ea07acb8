// Package snapshot owns what a Gatehouse snapshot is, apart from how it is
// delivered: a content-addressed set of files (File, FileMeta, Kind, and
// the version computed over them: New, VersionOf), and the schema of those
// files (what the control plane publishes, its deterministic encoding,
// the validating decoder the proxy loads it with; see docs/snapshot.md).
// The control plane builds snapshots, agent/server delivers them, the
// agent writes their files through sidecar, and the proxy decodes them.
// It imports nothing of Gatehouse's, no gRPC and no Kubernetes package.
package snapshot
