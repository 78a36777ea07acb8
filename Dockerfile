# syntax=docker/dockerfile:1
#
# Gatehouse's three images, one target each:
#
#   docker build --target gatehouse       -t ghcr.io/gatehouse-dev/gatehouse .        # controller and every other subcommand
#   docker build --target gatehouse-agent -t ghcr.io/gatehouse-dev/gatehouse-agent .  # the agent sidecar
#   docker build --target gatehouse-proxy -t ghcr.io/gatehouse-dev/gatehouse-proxy .  # the extension proxy
#
# `make image` builds all three (with --build-arg VERSION). The binaries are
# built by `make build`, as on a workstation: static (CGO_ENABLED=0),
# -trimpath, stripped, the version stamped in. Each image is distroless
# static, nonroot (65532, the user the manifests run as), holds one binary
# and nothing else, and writes nothing to its root filesystem (the manifests
# mount it read-only). BuildKit builds for other platforms with --platform.

ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH make build BINDIR=/out VERSION=$VERSION

FROM gcr.io/distroless/static-debian12:nonroot AS gatehouse
COPY --from=build /out/gatehouse /usr/local/bin/gatehouse
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/gatehouse"]

FROM gcr.io/distroless/static-debian12:nonroot AS gatehouse-agent
COPY --from=build /out/gatehouse-agent /usr/local/bin/gatehouse-agent
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/gatehouse-agent"]

FROM gcr.io/distroless/static-debian12:nonroot AS gatehouse-proxy
COPY --from=build /out/gatehouse-proxy /usr/local/bin/gatehouse-proxy
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/gatehouse-proxy"]
