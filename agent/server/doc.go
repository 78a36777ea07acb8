// Package server is the control-plane half of the agent channel; it runs
// inside `gatehouse controller`. It owns the registry of connected agents,
// authenticates every stream (package authn), announces snapshot versions
// and records what each agent made of them, and serves file content.
//
// What a snapshot contains is decided elsewhere (controlplane/); this package
// only takes finished, immutable Snapshots through Publish and delivers them:
//
//   - every agent is told the newest version; an agent that is slow to read
//     never delays the others, because each agent has a one-slot queue that
//     keeps only the newest announcement;
//   - a version counts as delivered only when the agent reports it APPLIED;
//   - a version an agent REJECTED is not announced to it again until a
//     different version is published;
//   - an agent that (re)connects is registered and told the current version
//     under the same lock Publish takes, so no version published in between
//     is missed.
package server
