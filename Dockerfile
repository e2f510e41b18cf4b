# iggy-server image: the broker `iggy-server`, the `iggy` CLI and the default configs/server.toml
# on Debian bookworm-slim, running as a non-root user with its data in the /data volume.
#
# Compile inside the official Rust image (needs a registry for rust and debian):
#   docker build -t rill/iggy-server .
#
# Or take binaries already built on the host (no Rust image is pulled):
#   cargo build --release --locked -p rill-server -p rill-cli
#   docker build --build-arg HOST_BINARIES=target/release -t rill/iggy-server .
# The host binaries must run on bookworm's glibc (2.36): build them on Debian 12 or older.
# .dockerignore lets only target/release/iggy-server and target/release/iggy into the context.
#
# Run it (see README.md, "Docker"): it serves on any engine; on Docker Engine 25+ add the seccomp
# profile for io_uring (otherwise it runs on the readiness driver and says so):
#   docker run -d -p 8090:8090 -v iggy-data:/data --stop-timeout 30 \
#     --security-opt seccomp=docker/seccomp-io-uring.json --ulimit memlock=-1:-1 \
#     -e IGGY_ROOT_PASSWORD=change-me rill/iggy-server

# Path, inside the build context, of prebuilt `iggy-server` and `iggy`; empty = compile here.
ARG HOST_BINARIES=
# The build stage's image follows from HOST_BINARIES (a plain Debian is enough to copy files).
# It is chosen here rather than by skipping a stage, because the classic builder (Docker without
# BuildKit) builds every stage of a Dockerfile and would pull the Rust image even when unused.
ARG BUILD_IMAGE=${HOST_BINARIES:+debian:bookworm-slim}

FROM ${BUILD_IMAGE:-rust:1.95-slim-bookworm} AS build
# Marks this stage's leftover images for `docker image prune --filter label=org.rill.stage=build`.
LABEL org.rill.stage=build
ARG HOST_BINARIES
WORKDIR /src
COPY . .
RUN set -eux; \
    mkdir -p /out; \
    if [ -n "$HOST_BINARIES" ]; then \
        cp "$HOST_BINARIES/iggy-server" "$HOST_BINARIES/iggy" /out/; \
    else \
        apt-get update; \
        apt-get install -y --no-install-recommends pkg-config libhwloc-dev libudev-dev; \
        cargo build --release --locked -p rill-server -p rill-cli; \
        cp target/release/iggy-server target/release/iggy /out/; \
    fi

FROM debian:bookworm-slim
LABEL org.opencontainers.image.title="iggy-server (rill)" \
      org.opencontainers.image.description="Message-streaming broker wire-compatible with Apache Iggy" \
      org.opencontainers.image.licenses="Apache-2.0"
# iggy-server links libhwloc (CPU topology for shard placement) and libudev dynamically.
RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends libhwloc15 libudev1; \
    rm -rf /var/lib/apt/lists/*; \
    groupadd --system --gid 10001 iggy; \
    useradd --system --uid 10001 --gid iggy --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin iggy; \
    mkdir -p /data /etc/iggy; \
    chown iggy:iggy /data
COPY --from=build /out/iggy-server /out/iggy /usr/local/bin/
COPY configs/server.toml /etc/iggy/server.toml
# Fails the build if a shared library the binaries need is missing.
RUN iggy-server --version && iggy --version
# Every configuration key can be overridden the same way (IGGY_ + its TOML path, upper case).
# The root user comes from IGGY_ROOT_USERNAME/IGGY_ROOT_PASSWORD on first start; without them
# a random password is generated and printed once in the log.
ENV IGGY_CONFIG_PATH=/etc/iggy/server.toml \
    IGGY_SYSTEM_PATH=/data \
    IGGY_TCP_ADDRESS=0.0.0.0:8090 \
    IGGY_QUIC_ADDRESS=0.0.0.0:8080 \
    IGGY_HTTP_ADDRESS=0.0.0.0:3000 \
    IGGY_WEBSOCKET_ADDRESS=0.0.0.0:8092
# Metadata and partition logs. Segment files are written with O_DIRECT: keep /data on a volume or
# bind mount (ext4, xfs), not on the container's overlay layer.
VOLUME ["/data"]
# 8090/tcp: Iggy's binary protocol over TCP (0.8 and 0.9 clients alike). 8080/udp: the same over
# QUIC. 8092/tcp: the same over WebSocket. 3000/tcp: the HTTP REST API (JWT) and the operators'
# /metrics, /ping, /stats (/metrics has no authentication: publish 3000 only on a private
# address, or put the API behind a proxy that hides /metrics). Upstream's Helm chart mounts its volume
# at /app/local_data: with it, set IGGY_SYSTEM_PATH=/app/local_data, or data stays in the
# container.
EXPOSE 8090/tcp 8080/udp 3000/tcp 8092/tcp
USER iggy:iggy
WORKDIR /data
# SIGTERM (docker stop) drains connections and flushes partitions before exiting.
STOPSIGNAL SIGTERM
ENTRYPOINT ["iggy-server"]
