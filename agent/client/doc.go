// Package client is the agent half of the control-plane channel: it connects
// to the controller, downloads announced snapshots, verifies and writes them
// through sidecar.Writer, confirms them with the proxy and reports back.
package client
