# lionbus: one image with both binaries, worker (the entrypoint) and
# publisher. Build from the repository root:
#
#   docker build -t lionbus:dev .
#   docker run --rm lionbus:dev --help
#   docker run --rm --entrypoint publisher lionbus:dev --help

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Modules first, so that a code change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/ ./cmd/worker ./cmd/publisher

# Static binaries need no libc; distroless/static has CA certificates,
# /tmp (the embedded server's temporary store) and a non-root user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/worker /out/publisher /usr/local/bin/
# The numeric id of distroless's "nonroot", so that Kubernetes runAsNonRoot can
# verify it.
USER 65532:65532
# 4222: the embedded NATS server, when the worker runs without --nats
# (then also pass --host 0.0.0.0).
EXPOSE 4222
ENTRYPOINT ["/usr/local/bin/worker"]
