#!/usr/bin/env bash
# install-bench.sh makes sure the load generator and the reference proxy the
# proxy benchmarks drive are here: wrk (BenchmarkProxyLoad, BenchmarkProxySoak
# skip without it) and nginx (the same-run baseline; left out without it).
# Debian's packages, installed with apt-get when missing and we run as root.
# Silent when both are there; never fails make bench itself.
set -euo pipefail

missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx)
[[ ${#missing[@]} -eq 0 ]] && exit 0
log() { echo "install-bench.sh: $*" >&2; }
if [[ "$(id -u)" -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	log "missing ${missing[*]}, which cannot be installed here (needs root and apt-get); the proxy benchmarks skip or leave them out"
	exit 0
fi
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
log "installing ${missing[*]} from Debian's packages (once)"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq "${missing[@]}" >"$out" 2>&1; then
	if ! { apt-get update -qq && apt-get install -y -qq "${missing[@]}"; } >"$out" 2>&1; then
		log "apt-get install ${missing[*]} failed; the proxy benchmarks skip or leave them out:"
		tail -n 20 "$out" >&2
	fi
fi
