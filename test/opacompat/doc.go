// Package opacompat checks Gatehouse's bundles against OPA's own code that
// is not part of the product: OPA's OCI downloader pulls what `gatehouse
// policy push` publishes. It is a module of its own, so that the
// downloader's dependencies (OpenTelemetry, AWS signing) stay out of
// Gatehouse's go.mod; `make test` runs it.
package opacompat
