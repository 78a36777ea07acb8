// Package e2e runs Gatehouse against a real kube-apiserver and etcd (built by
// test/tools/install.sh, started by controller-runtime's envtest), driving it
// with the real kubectl as tenants and administrators would. TestFullStack
// runs the whole system on an API server of its own (BenchmarkFullStackSoak
// soaks it: make bench); TestInstallGuide runs every command of
// docs/install.md on fresh API servers of its own.
package e2e
