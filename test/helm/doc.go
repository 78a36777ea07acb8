// Package helm holds the Helm chart (charts/gatehouse) to the kustomize
// manifests it installs: rendered with Helm's own Go SDK, with default values
// and with each variant's values, it must be, object for object, what
// `kubectl kustomize` renders of manifests/ and its variants. It also checks
// the values the manifests do not have, the values schema, the values table
// of the chart's README, and `helm lint --strict`. A module of its own: the
// product's go.mod stays free of Helm's SDK.
package helm
