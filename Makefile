# Gatehouse: `make run` to see it work, `make test` to check everything.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

BINDIR   ?= bin
BIN      ?= $(BINDIR)/gatehouse
GO       ?= go
# The three binaries: the controller and every other subcommand, the agent
# sidecar, the proxy. Static, reproducible, stamped with the version; the
# Dockerfile builds them with this same target.
BINARIES = gatehouse gatehouse-agent gatehouse-proxy
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The build's identity, stamped into internal/buildinfo (`gatehouse version`,
# --version, gatehouse_build_info): the commit and its time (not the build's,
# so builds stay reproducible), and go.mod's OPA, which the agent does not
# link. Empty ones fall back to what the Go toolchain recorded.
COMMIT      ?= $(shell c=$$(git rev-parse HEAD 2>/dev/null) && { git diff --quiet HEAD -- 2>/dev/null || c=$$c-dirty; }; echo $$c)
BUILD_DATE  ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
OPA_VERSION ?= $(shell $(GO) list -m -f '{{.Version}}' github.com/open-policy-agent/opa 2>/dev/null)
BUILDINFO   = github.com/gatehouse-dev/gatehouse/internal/buildinfo
GOBUILD  = CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT) -X $(BUILDINFO).date=$(BUILD_DATE) -X $(BUILDINFO).opaVersion=$(OPA_VERSION)"
# make release VERSION=vX.Y.Z: where it writes, the platforms of all three
# binaries and those of the CLI alone, and whether it builds the images
# (when a container engine works).
DIST           ?= dist
PLATFORMS      ?= linux/amd64 linux/arm64
CLI_PLATFORMS  ?= darwin/amd64 darwin/arm64
RELEASE_IMAGES ?= yes
CHART           = charts/gatehouse
# make image: the registry and tag of the images; the engine is the first
# of docker and podman whose `info` succeeds, unless CONTAINER_ENGINE says.
IMAGE_REPO ?= ghcr.io/gatehouse-dev
IMAGE_TAG  ?= $(VERSION)
CONTAINER_ENGINE ?=
# Test binaries (kube-apiserver, etcd, kubectl, golangci-lint) are built once
# from the Go module proxy and cached; see test/tools/install.sh.
TOOLS    = $(shell test/tools/install.sh)
# Argo CD's RBAC enforcer, in its own module: test/casbindiff holds the casbin
# importer to it.
ARGOCDREF = test/argocdref

.PHONY: all build image release run test unit lint tools bench generate fmt clean

all: build

build:
	@for b in $(BINARIES); do echo "+ $(BINDIR)/$$b"; $(GOBUILD) -o $(BINDIR)/$$b ./cmd/$$b || exit 1; done

## image: the three images (Dockerfile), when docker or podman has a
## working engine; otherwise the binaries they would hold, built and checked
## as the Dockerfile builds them (test/image).
image:
	@engine="$(CONTAINER_ENGINE)"; \
	if [ -z "$$engine" ]; then for e in docker podman; do \
		if command -v $$e >/dev/null && $$e info >/dev/null 2>&1; then engine=$$e; break; fi; done; fi; \
	if [ -z "$$engine" ]; then \
		echo "make image: no working container engine (neither 'docker info' nor 'podman info' succeeds); images not built."; \
		echo "make image: building and checking the binaries the images would hold instead, as the Dockerfile builds them:"; \
		$(MAKE) --no-print-directory build BINDIR=$(BINDIR)/image && \
		GATEHOUSE_IMAGE_BINARIES="$(abspath $(BINDIR)/image)" GATEHOUSE_IMAGE_VERSION="$(VERSION)" $(GO) test -count=1 ./test/image/; \
		exit; \
	fi; \
	for b in $(BINARIES); do \
		echo "+ $$engine build --target $$b -t $(IMAGE_REPO)/$$b:$(IMAGE_TAG)"; \
		$$engine build --target $$b --build-arg VERSION=$(VERSION) -t $(IMAGE_REPO)/$$b:$(IMAGE_TAG) . || exit 1; \
	done

## release: make release VERSION=vX.Y.Z writes $(DIST)/: the three binaries
## for each of PLATFORMS (static, -trimpath) and the CLI for CLI_PLATFORMS
## too, a CycloneDX SBOM of each (cyclonedx-gomod, from the modules the
## binary records), install.yaml (manifests/ with every image at VERSION),
## the Helm chart packaged at VERSION, and SHA256SUMS of them all; then the
## images, when a container engine works (make image).
release:
	@semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$$'; \
	[[ "$(VERSION)" =~ $$semver ]] || { echo "make release: VERSION=\"$(VERSION)\" is not a release version: give v, then MAJOR.MINOR.PATCH (semver), e.g. make release VERSION=v0.1.0" >&2; exit 2; }
	@test -f $(CHART)/Chart.yaml || { echo "make release: $(CHART)/Chart.yaml is missing: the release packages the Helm chart, so it must be in the tree" >&2; exit 1; }
	@for t in kubectl helm cyclonedx-gomod; do test -x "$(TOOLS)/$$t" || { echo "make release: $(TOOLS)/$$t is missing: run test/tools/install.sh" >&2; exit 1; }; done
	rm -rf "$(DIST)" && mkdir -p "$(DIST)"
	@for p in $(PLATFORMS:%=all:%) $(CLI_PLATFORMS:%=cli:%); do \
		which="$${p%%:*}"; p="$${p#*:}"; os="$${p%/*}"; arch="$${p#*/}"; \
		for b in $(BINARIES); do \
			[[ "$$which" == all || "$$b" == gatehouse ]] || continue; \
			out="$(DIST)/$$b-$$os-$$arch"; echo "+ $$out"; \
			GOOS=$$os GOARCH=$$arch $(GOBUILD) -o "$$out" ./cmd/$$b; \
			log="$$(GOOS=$$os GOARCH=$$arch "$(TOOLS)/cyclonedx-gomod" bin -json -std -noserial -notimestamp -version $(VERSION) -output "$$out.cdx.json" "$$out" 2>&1)" || \
				{ echo "$$log" >&2; echo "make release: cyclonedx-gomod could not write the SBOM of $$out (above)" >&2; exit 1; }; \
		done; \
	done
	@overlay="$$(mktemp -d)"; trap 'rm -rf "$$overlay"' EXIT; \
	{ echo "apiVersion: kustomize.config.k8s.io/v1beta1"; echo "kind: Kustomization"; \
	  echo "resources: [$$(realpath --relative-to="$$overlay" manifests)]"; echo "images:"; \
	  for b in $(BINARIES); do echo "  - {name: ghcr.io/gatehouse-dev/$$b, newName: $(IMAGE_REPO)/$$b, newTag: $(VERSION)}"; done; } > "$$overlay/kustomization.yaml"; \
	"$(TOOLS)/kubectl" kustomize "$$overlay" > "$(DIST)/install.yaml"; \
	if grep -n ':latest' "$(DIST)/install.yaml" || grep -n 'image:' "$(DIST)/install.yaml" | grep -v ':$(VERSION)$$'; then \
		echo "make release: $(DIST)/install.yaml has an image not at $(VERSION) (above)" >&2; exit 1; fi; \
	echo "+ $(DIST)/install.yaml"
	"$(TOOLS)/helm" package $(CHART) --version $(VERSION:v%=%) --app-version $(VERSION) -d "$(DIST)"
	cd "$(DIST)" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS
	@engine="$(CONTAINER_ENGINE)"; \
	if [ -z "$$engine" ]; then for e in docker podman; do \
		if command -v $$e >/dev/null && $$e info >/dev/null 2>&1; then engine=$$e; break; fi; done; fi; \
	if [ "$(RELEASE_IMAGES)" != yes ]; then echo "make release: images not built (RELEASE_IMAGES=$(RELEASE_IMAGES))"; \
	elif [ -z "$$engine" ]; then echo "make release: no working container engine (neither 'docker info' nor 'podman info' succeeds): images not built; build them where one works with make image VERSION=$(VERSION)"; \
	else $(MAKE) --no-print-directory image VERSION=$(VERSION) CONTAINER_ENGINE=$$engine; fi
	@echo "make release: $(DIST)/ holds $(VERSION) (sha256sum -c SHA256SUMS there checks it)"

## run: the whole product on this machine, from examples/ (gatehouse dev):
## the tour, then the controller, an agent and the proxy serving, with curl
## commands to try; edits of examples/ take effect at once; Ctrl-C stops it.
run: build
	./$(BIN) dev

## tools: build (or reuse) kube-apiserver, etcd, kubectl, helm, golangci-lint
## and cyclonedx-gomod, and install headless Chromium (Debian's package) for
## the browser scenario
## and redis-server (Debian's) for the Argo CD session test.
tools:
	@test/tools/install.sh >/dev/null
	@test/tools/install-browser.sh
	@test/tools/install-redis.sh

## test: everything CI runs: lint, then all tests with the race detector
## against a real kube-apiserver + etcd, and the Argo CD reference module's.
## The browser scenario must run here: a missing Chromium fails it; so
## must the release check (test/release: a linux/amd64 make release).
test: tools lint
	KUBEBUILDER_ASSETS="$(TOOLS)" GATEHOUSE_E2E_BROWSER=required GATEHOUSE_RELEASE=required $(GO) test -race -count=1 ./...
	# The policy sandbox's memory budget, in the release build that holds it:
	# under -race the detector's shadow memory counts against RLIMIT_DATA, so
	# the run above skips these.
	$(GO) test -count=1 -run 'ExhaustsMemory|ExhaustMemory|TestPolicyCommandsApplyLimits' ./policies/ ./controlplane/source/ ./policies/policycli/
	cd $(ARGOCDREF) && $(GO) test -count=1 ./...
	cd test/opacompat && $(GO) test -race -count=1 ./...
	cd test/promql && $(GO) test -count=1 ./...
	# The Helm chart against kubectl kustomize, with Helm's SDK, and helm lint.
	cd test/helm && KUBEBUILDER_ASSETS="$(TOOLS)" $(GO) test -count=1 ./...

unit:
	$(GO) test -count=1 ./...

lint: tools
	$(GO) vet ./...
	cd $(ARGOCDREF) && $(GO) vet ./...
	cd test/opacompat && $(GO) vet ./...
	cd test/promql && $(GO) vet ./...
	cd test/helm && $(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting (make fmt)"; exit 1; }
	"$(TOOLS)/golangci-lint" run ./...
	cd $(ARGOCDREF) && "$(TOOLS)/golangci-lint" run ./...

fmt:
	gofmt -w $$(find . -name '*.go' -not -path './test/tools/*')

## bench: every component's benchmarks (the full-stack soak included: 10
## minutes), then one summary table of figures, targets and same-run
## baselines written into docs/performance.md (test/bench/summary); and 2,000
## random policies against Argo CD's enforcer (make test runs 40). One
## package at a time (-p 1), so no two benchmarks share the cores. The output
## stays in bin/bench.txt, between run lines (start time, commit, go version,
## load average at the start and the end) the summary reads.
## A part of it: make bench BENCH_PKGS=./test/bench/agentchannel/ BENCH_RUN=AgentChannel
## runs only those packages' benchmarks that match BENCH_RUN (go test -bench)
## and refreshes only their rows; every other row keeps its figure and names
## the run that measured it. The whole of make bench takes about 2 hours on 2 cores.
BENCH_PKGS ?= ./...
BENCH_RUN  ?= .
bench: tools
	@test/tools/install-bench.sh
	@mkdir -p bin
	@{ echo "# gatehouse-bench start: $$(date -u +%Y-%m-%dT%H:%M:%SZ) commit=$$(git rev-parse --short HEAD)$$(git diff --quiet HEAD -- || echo -dirty) go=$$($(GO) env GOVERSION) cores=$$(nproc) load=$$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)"; \
	  echo "# gatehouse-bench command: make bench$(if $(filter-out ./...,$(BENCH_PKGS)), BENCH_PKGS='$(BENCH_PKGS)')$(if $(filter-out .,$(BENCH_RUN)), BENCH_RUN='$(BENCH_RUN)')"; } > bin/bench.txt
	status=0; KUBEBUILDER_ASSETS="$(TOOLS)" $(GO) test -run '^$$' -bench '$(BENCH_RUN)' -benchmem -count=1 -p 1 -timeout 90m $(BENCH_PKGS) | tee -a bin/bench.txt || status=$$?; \
	echo "# gatehouse-bench end: $$(date -u +%Y-%m-%dT%H:%M:%SZ) load=$$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)" >> bin/bench.txt; \
	$(GO) run ./test/bench/summary -in bin/bench.txt -doc docs/performance.md; exit $$status
	@if [ '$(BENCH_PKGS)' = './...' ] && [ '$(BENCH_RUN)' = '.' ]; then set -x; GATEHOUSE_CASBINDIFF_N=2000 $(GO) test -count=1 -run TestRandomPoliciesAgreeWithArgoCD ./test/casbindiff/; \
	else echo "make bench: a part (BENCH_PKGS, BENCH_RUN): the 2,000 random policies against Argo CD's enforcer left out"; fi

generate:
	$(GO) generate ./...

clean:
	rm -rf bin
