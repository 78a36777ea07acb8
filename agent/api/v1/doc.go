// Package agentv1 is the wire protocol between the Gatehouse control plane
// and its agents: commander.proto and the Go code protoc generates from it
// (`make generate`; edit the .proto, never the generated files), and the one
// conversion between its FileMeta and the snapshot model (files.go).
package agentv1

//go:generate ../../../test/tools/generate-proto.sh
