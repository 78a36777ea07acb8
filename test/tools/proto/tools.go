//go:build tools

// Package proto records the protoc plugins `make generate` builds, so that
// `go mod tidy` keeps their dependencies in go.sum.
package proto

import (
	_ "google.golang.org/grpc/cmd/protoc-gen-go-grpc"
	_ "google.golang.org/protobuf/cmd/protoc-gen-go"
)
