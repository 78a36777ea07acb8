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
GOBUILD  = CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)"
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

.PHONY: all build image run test unit lint tools bench generate fmt clean

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

## run: the whole product on this machine, from examples/ (gatehouse dev):
## the tour, then the controller, an agent and the proxy serving, with curl
## commands to try; edits of examples/ take effect at once; Ctrl-C stops it.
run: build
	./$(BIN) dev

## tools: build (or reuse) kube-apiserver, etcd, kubectl and golangci-lint,
## and install headless Chromium (Debian's package) for the browser scenario
## and redis-server (Debian's) for the Argo CD session test.
tools:
	@test/tools/install.sh >/dev/null
	@test/tools/install-browser.sh
	@test/tools/install-redis.sh

## test: everything CI runs: lint, then all tests with the race detector
## against a real kube-apiserver + etcd, and the Argo CD reference module's.
## The browser scenario must run here: a missing Chromium fails it.
test: tools lint
	KUBEBUILDER_ASSETS="$(TOOLS)" GATEHOUSE_E2E_BROWSER=required $(GO) test -race -count=1 ./...
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
## stays in bin/bench.txt.
bench: tools
	@test/tools/install-bench.sh
	@mkdir -p bin
	@cat /proc/loadavg > bin/bench-load.txt 2>/dev/null || true
	KUBEBUILDER_ASSETS="$(TOOLS)" $(GO) test -run '^$$' -bench . -benchmem -count=1 -p 1 -timeout 90m ./... | tee bin/bench.txt
	$(GO) run ./test/bench/summary -in bin/bench.txt -doc docs/performance.md -load-start "$$(cat bin/bench-load.txt 2>/dev/null)"
	GATEHOUSE_CASBINDIFF_N=2000 $(GO) test -count=1 -run TestRandomPoliciesAgreeWithArgoCD ./test/casbindiff/

generate:
	$(GO) generate ./...

clean:
	rm -rf bin
