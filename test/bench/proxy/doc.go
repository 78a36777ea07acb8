// Package proxybench measures the extension proxy as a process under load:
// BenchmarkProxyLoad drives, in one sitting and with wrk, the backend
// directly, a tuned bare Go reverse proxy (bareproxy), nginx when it is
// installed, and `gatehouse proxy` with token verification, Rego
// authorization and rate limits on for a thousand distinct users, and reports
// each one's CPU per request, latency, the backend connections it opened and
// the proxy's memory with a 10,000-Application snapshot; then the p99 a
// proxy adds at half of its peak rate, and a run during which the snapshot
// changes every second. BenchmarkProxySoak sends a million requests and
// compares goroutines and open files outside the backend connection pool
// before and after. Nothing here runs without -bench; figures and commands
// are in docs/performance.md.
package proxybench
