# syntax=docker/dockerfile:1
# odaflow image: one static binary, `odaflow worker` (default) or `odaflow watcher`.
#
#   docker build --build-arg VERSION=$(cat VERSION) \
#     --build-arg REVISION=$(git rev-parse HEAD) -t odaflow:dev .
#
# Without a container engine, `make image` builds the same image with
# hack/image (go-containerregistry): see docs/install.md.

FROM golang:1.26.8 AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
# Dependencies first, so that source changes reuse the module layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
# `odaflow version` prints the VERSION file the binary embeds; the chart's
# appVersion and the image label name the same release.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /out/odaflow ./cmd/odaflow

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=""
LABEL org.opencontainers.image.title="odaflow" \
      org.opencontainers.image.description="TM Forum ODA Canvas operators on Temporal" \
      org.opencontainers.image.source="https://github.com/odaflow/odaflow" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/odaflow /odaflow
USER 65532:65532
# /healthz, /readyz and /metrics.
EXPOSE 8080
ENTRYPOINT ["/odaflow"]
CMD ["worker"]
