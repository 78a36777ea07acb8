// Package internal owns the plumbing with no users outside Gatehouse: Argo CD's semantics (argocd),
// the snapshot model, YAML, problems, flags, certificates, atomic files, and `gatehouse dev` (demo, devcli).
// Its packages must never import cmd; only demo and devcli (dev's wiring) import the rooms above them.
package internal
