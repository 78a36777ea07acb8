// Package controlplane turns cluster state into the snapshot the proxies serve: it
// holds the projected objects its sources feed it (Store), builds deterministic,
// versioned snapshots from them (Builder) and publishes them, debounced (Controller).
package controlplane
