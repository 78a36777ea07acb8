// Package server is the control-plane half of the agent channel; it runs
// inside `gatehouse controller`. It owns the registry of connected agents,
// authenticates every stream (package authn), announces snapshot versions
// and records what each agent made of them, and serves file content.
//
// What a snapshot is and contains is decided elsewhere (package snapshot,
// controlplane/); this package takes finished, immutable snapshot.Snapshots
// through Publish, keeps what it prepares to send them (manifests,
// announcements, deltas, cold-start downloads) per version, and delivers
// them:
//
//   - every agent is told the newest version; an agent that is slow to read
//     never delays the others, because each agent has a one-slot queue that
//     keeps only the newest announcement;
//   - a version counts as delivered only when the agent reports it APPLIED;
//   - a version an agent instance REJECTED as invalid (deterministic) is
//     not announced to that instance again until a different version is
//     published; a restarted agent (a new instance id) and an agent that
//     failed for a transient reason (its disk, its proxy) are offered it
//     again, and the latter retries by itself;
//   - an agent connected but behind the current version for longer than
//     StaleAfter is stale: the registry and a metric say so;
//   - an agent that (re)connects is registered and told the current version
//     under the same lock Publish takes, so no version published in between
//     is missed.
package server
