#!/usr/bin/env bash
# install-browser.sh makes sure headless Chromium is here for the end-to-end
# browser scenario (test/e2e TestFullStack, scenario 8): Debian's chromium
# package, installed with apt-get when it is missing and we run as root.
# Silent when a browser is there. It never fails the build itself: make test
# runs the scenario with GATEHOUSE_E2E_BROWSER=required, so a browser that
# could not be installed fails that scenario with what to do.
#
#   GATEHOUSE_CHROMIUM   a Chromium or Chrome binary to use instead
set -euo pipefail

if [[ -n "${GATEHOUSE_CHROMIUM:-}" ]] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
	exit 0
fi
log() { echo "install-browser.sh: $*" >&2; }
if [[ "$(id -u)" -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	log "no chromium on PATH, and it cannot be installed here (needs root and apt-get);"
	log "the browser scenario will fail: install Chromium, or set GATEHOUSE_CHROMIUM to a Chromium or Chrome binary"
	exit 0
fi
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
log "installing chromium from Debian's packages (once; about a minute)"
export DEBIAN_FRONTEND=noninteractive
# The package lists of a fresh machine may be empty or old: update once and
# try again when the first attempt fails.
if ! apt-get install -y -qq chromium >"$out" 2>&1; then
	if ! { apt-get update -qq && apt-get install -y -qq chromium; } >"$out" 2>&1; then
		log "apt-get install chromium failed; the browser scenario will fail:"
		tail -n 20 "$out" >&2
		exit 0
	fi
fi
log "installed $(command -v chromium)"
