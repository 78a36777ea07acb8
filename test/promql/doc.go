// Package promql parses every expression of manifests/monitoring (the alert
// rules and the Grafana dashboard) with Prometheus's own PromQL parser, so a
// query Prometheus would refuse fails here (promtool is not available). A
// module of its own: the product's go.mod stays free of Prometheus's server
// code. test/monitoring checks the metric names the expressions read.
package promql
