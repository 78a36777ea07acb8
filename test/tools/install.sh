#!/usr/bin/env bash
# install.sh builds the binaries the tests run -- kube-apiserver,
# kube-controller-manager, kubectl, helm, etcd, golangci-lint and
# cyclonedx-gomod -- from the Go module proxy into a cache directory, and
# prints that directory (use it as KUBEBUILDER_ASSETS). A binary already in
# the cache is not rebuilt, so only the first run on a machine pays the
# ~6 minutes kube-apiserver takes on 2 cores.
#
#   GATEHOUSE_TOOLS_DIR   cache root (default: $XDG_CACHE_HOME or ~/.cache, /gatehouse/tools)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

kube_version="$(sed -n 's#^require k8s.io/kubernetes \(v[0-9.]*\)$#\1#p' "$here/kube/go.mod")"
lint_version="$(sed -n 's#^require github.com/golangci/golangci-lint/v2 \(v[0-9.]*\)$#\1#p' "$here/lint/go.mod")"
helm_version="$(sed -n 's#^require helm.sh/helm/v3 \(v[0-9.]*\)$#\1#p' "$here/helm/go.mod")"
etcd_version="$(sed -n 's#^require go.etcd.io/etcd/server/v3 \(v[0-9.]*\)$#\1#p' "$here/etcd/go.mod")"
if [[ -z "$kube_version" || -z "$etcd_version" || -z "$lint_version" || -z "$helm_version" ]]; then
	echo "install.sh: cannot read pinned versions from $here/{kube,etcd,lint,helm}/go.mod" >&2
	exit 1
fi

cache_root="${GATEHOUSE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse/tools}"
bin="$cache_root/k8s-${kube_version#v}-etcd-${etcd_version#v}-golangci-${lint_version#v}"
mkdir -p "$bin"

log() { echo "install.sh: $*" >&2; }

# Kubernetes binaries print the version baked in with these ldflags; without
# them `kubectl version` reports v0.0.0-master.
kube_ldflags() {
	local v="$kube_version" major minor
	major="${v#v}"; major="${major%%.*}"
	minor="${v#v*.}"; minor="${minor%%.*}"
	local flags="-s -w"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	echo "$flags"
}

build() { # build <module dir> <output name> <package> <ldflags>
	local dir="$1" name="$2" pkg="$3" ldflags="$4"
	if [[ -x "$bin/$name" ]]; then
		return 0
	fi
	log "building $name from $pkg (cached afterwards in $bin)"
	local start=$SECONDS
	# Build into a temporary name and rename, so an interrupted build never
	# leaves a binary behind that a later run would trust.
	(cd "$here/$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -buildvcs=false \
		-ldflags "$ldflags" -o "$bin/.$name.tmp" "$pkg")
	mv -f "$bin/.$name.tmp" "$bin/$name"
	log "built $name in $((SECONDS - start))s"
}

build etcd etcd go.etcd.io/etcd/server/v3 "-s -w"
build kube kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$(kube_ldflags)"
build kube kubectl k8s.io/kubernetes/cmd/kubectl "$(kube_ldflags)"
# kube-controller-manager: test/e2e's TestInstallGuide runs its namespace
# controller, so that deleting a namespace finishes; like helm, not part of
# the cache directory's name.
build kube kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$(kube_ldflags)"
build lint golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint \
	"-s -w -X main.version=${lint_version#v}"
# helm: the chart's lint, render and package (charts/gatehouse, make release).
# Not part of the cache directory's name, so adding it reuses a cache built
# before it: only helm is built then.
build helm helm helm.sh/helm/v3/cmd/helm "-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version"
# cyclonedx-gomod: make release's SBOM of each binary (CycloneDX JSON).
build cyclonedx cyclonedx-gomod github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod "-s -w"

echo "$bin"
