// Module proto pins the protoc plugins `make generate` runs to produce
// agent/api/v1's Go code. protoc itself comes from Debian's
// protobuf-compiler package.
module github.com/gatehouse-dev/gatehouse/test/tools/proto

go 1.26.0

require (
	google.golang.org/grpc/cmd/protoc-gen-go-grpc v1.6.1
	google.golang.org/protobuf v1.36.11
)
