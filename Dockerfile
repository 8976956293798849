# syntax=docker/dockerfile:1
# odaflow image: one static binary, `odaflow worker` (default) or `odaflow watcher`.
#
#   docker build -t odaflow:dev .
#
# No container engine runs on the development machines; `make dev` runs the
# same binary on the host. This file is for CI and real clusters.

FROM golang:1.26.8 AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
# Dependencies first, so that source changes reuse the module layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -o /out/odaflow ./cmd/odaflow

FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.title="odaflow" \
      org.opencontainers.image.description="TM Forum ODA Canvas operators on Temporal" \
      org.opencontainers.image.source="https://github.com/odaflow/odaflow"
COPY --from=build /out/odaflow /odaflow
USER 65532:65532
# /healthz, /readyz and /metrics.
EXPOSE 8080
ENTRYPOINT ["/odaflow"]
CMD ["worker"]
