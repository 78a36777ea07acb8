// Package api owns Gatehouse's own Kubernetes API: the PolicyBundle CRD's types and the checks its
// spec must pass (v1alpha1), which the CRD schema, the webhook and the fetcher share.
// It must never import anything else of Gatehouse, nor link client-go, controller-runtime or gRPC.
package api
