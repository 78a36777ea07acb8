//go:build tools

// Package etcd records the command test/tools/install.sh builds, so that
// `go mod tidy` keeps its dependencies in go.sum.
package etcd

import _ "go.etcd.io/etcd/server/v3"
