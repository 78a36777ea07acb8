// Package monitoring holds the monitoring that manifests/monitoring ships
// (Prometheus alert rules, scrape targets, the Grafana dashboard) to the
// metrics the code registers: every metric an alert or a panel reads exists,
// every metric Gatehouse exports is on the dashboard, and every alert has its
// section in docs/operations.md. A renamed metric fails here.
package monitoring
