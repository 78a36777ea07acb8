// Package bench measures the admission webhook: BenchmarkAdmission runs the
// webhook exactly as `gatehouse controller` wires it, next to a no-op
// controller-runtime handler on the same server, with 1,000 AppProjects and
// 10,000 Applications in a real kube-apiserver + etcd (envtest), and drives
// it with realistic AdmissionReviews over HTTPS on loopback. The
// BenchmarkHandler and BenchmarkDecode microbenchmarks need no cluster.
//
// Nothing here runs without -bench, so `go test ./...` stays instant. The
// figures and how to reproduce them are in docs/performance.md.
package bench
