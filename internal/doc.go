// Package internal owns the plumbing with no users outside Gatehouse: Argo CD's semantics (argocd),
// the snapshot model, YAML, flags, certificates, atomic files, and what `gatehouse dev` runs (demo).
// Its packages must never import agent, proxy, sidecar, webhook or cmd; only demo imports controlplane.
package internal
