#!/usr/bin/env bash
# install-redis.sh makes sure redis-server is here for test/casbindiff's
# TestArgoCDServerModeAgainstArgoCD, which runs Argo CD's session code
# (test/argocdref session) over a real Redis, where Argo CD keeps the tokens
# revoked by logout: Debian's redis-server package, installed with apt-get
# when it is missing and we run as root. Silent when it is there. It never
# fails the build itself: the test fails with what to do.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
	exit 0
fi
log() { echo "install-redis.sh: $*" >&2; }
if [[ "$(id -u)" -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	log "no redis-server on PATH, and it cannot be installed here (needs root and apt-get);"
	log "the Argo CD session test will fail: install Redis (redis-server)"
	exit 0
fi
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
log "installing redis-server from Debian's packages (once)"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq redis-server >"$out" 2>&1; then
	if ! { apt-get update -qq && apt-get install -y -qq redis-server; } >"$out" 2>&1; then
		log "apt-get install redis-server failed; the Argo CD session test will fail:"
		tail -n 20 "$out" >&2
		exit 0
	fi
fi
log "installed $(command -v redis-server)"
