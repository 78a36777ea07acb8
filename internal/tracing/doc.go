// Package tracing owns OpenTelemetry tracing for Gatehouse's long-running commands: the --otlp-*
// flags, the tracer provider they start and stop, and its OTLP exporter, which speaks OTLP's gRPC
// protocol over net/http's HTTP/2 so that the slim proxy binary still links no gRPC.
//
// Nothing here is global: Start returns the provider, and each component is given it (or nil, with
// tracing off, when the component must do no tracing work at all). Spans are never parented on a
// context a caller sent: a request's traceparent is recorded as a link of a new trace (Remote).
package tracing
