// Package servingcert serves a TLS certificate and key read from files, and
// reads them again when they change (a Secret volume the kubelet updates in
// place), keeping the last pair that loaded. The proxy, the agent and the
// controller's metrics listeners share it.
package servingcert
