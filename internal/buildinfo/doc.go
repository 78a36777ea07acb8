// Package buildinfo owns the build's identity (release version, commit,
// build date, Go, OPA and snapshot schema versions) and every way it is
// shown: `gatehouse version`, each binary's --version, gatehouse_build_info.
//
// It must never import client-go, controller-runtime, OPA or gRPC: the slim
// agent and proxy binaries print their version with it. The Makefile stamps
// the variables of info.go with -ldflags -X; a build without them (go build,
// go install) falls back to what the Go toolchain recorded.
package buildinfo
