#!/usr/bin/env bash
# generate-proto.sh regenerates agent/api/v1's Go code from commander.proto
# with protoc (Debian package protobuf-compiler) and the plugins pinned in
# test/tools/proto, built into the tools cache.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if ! command -v protoc >/dev/null; then
	echo "generate-proto.sh: protoc not found; install it with: apt-get install -y protobuf-compiler" >&2
	exit 1
fi
cache="${GATEHOUSE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse/tools}/proto-$(sha256sum "$here/proto/go.mod" | cut -c1-12)"
mkdir -p "$cache"
for plugin in google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc; do
	name="${plugin##*/}"
	if [[ ! -x "$cache/$name" ]]; then
		(cd "$here/proto" && go build -trimpath -o "$cache/.$name.tmp" "$plugin")
		mv -f "$cache/.$name.tmp" "$cache/$name"
	fi
done
cd "$root"
PATH="$cache:$PATH" protoc -I . \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	agent/api/v1/commander.proto
echo "generate-proto.sh: agent/api/v1 regenerated with $(protoc --version)" >&2
