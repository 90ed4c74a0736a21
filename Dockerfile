# lionbus: one image with the worker (the entrypoint), the publisher and
# the two example tool services (calculator, notes). Build from the
# repository root:
#
#   docker build --build-arg VERSION=0.1.0 -t lionbus:0.1.0 .
#   docker run --rm lionbus:0.1.0 --help
#   docker run --rm --entrypoint publisher lionbus:0.1.0 --help
#   docker run --rm --entrypoint calculator lionbus:0.1.0 --nats nats://...
#
# Reproducible: the same sources, VERSION and base image give the same
# binaries (no VCS stamp, no build id, trimmed paths, no cgo) and the same
# files. The base image is an exact Go release (go.mod's); for a build that
# cannot change under you, pin its digest too:
#
#   docker build --build-arg GO_IMAGE=golang:1.26.8-bookworm@sha256:<digest> ...
#
# (docker buildx imagetools inspect golang:1.26.8-bookworm prints it).

ARG GO_IMAGE=golang:1.26.8-bookworm

FROM ${GO_IMAGE} AS build
ARG VERSION=0.1.0
WORKDIR /src
# Modules first, so that a code change does not download them again.
COPY go.mod go.sum ./
RUN go mod download && go mod verify
COPY . .
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
RUN go build -trimpath -ldflags="-s -w -buildid= -X main.version=${VERSION}" -o /out/ \
      ./cmd/worker ./cmd/publisher ./examples/tools/calculator ./examples/tools/notes
# The runtime's whole file system, besides the binaries: CA certificates
# (model providers over HTTPS), /tmp (the embedded server's temporary
# store) and the user nonroot (65532), with fixed modes and times.
RUN mkdir -p /rootfs/etc/ssl/certs /rootfs/tmp \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
 && echo 'nonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin' > /rootfs/etc/passwd \
 && echo 'nonroot:x:65532:' > /rootfs/etc/group \
 && chmod 1777 /rootfs/tmp \
 && find /rootfs /out -exec touch -h -d @0 {} +

# Nothing but the static binaries and the files above.
FROM scratch
COPY --from=build /rootfs/ /
COPY --from=build /out/worker /out/publisher /out/calculator /out/notes /usr/local/bin/
# Numeric, so that Kubernetes' runAsNonRoot can verify it.
USER 65532:65532
# 4222: the embedded NATS server, when the worker runs without --nats
# (then also pass --host 0.0.0.0); 9464: --metrics-addr :9464.
EXPOSE 4222 9464
ENTRYPOINT ["/usr/local/bin/worker"]
