#!/usr/bin/env bash
# Docker deployment test: builds the image from ../Dockerfile and runs it for real.
#
#  1. base image: uses the Dockerfile's runtime base (debian:bookworm-slim) if the engine has it;
#     otherwise debootstraps a minimal Debian bookworm into target/docker-rootfs (kept as a cache),
#     slims it like Debian's official -slim image and `docker import`s it under that tag, so no
#     registry is needed;
#  2. builds iggy-server and iggy on the host, then the image with HOST_BINARIES=target/release
#     (so no Rust image is needed), and checks it: non-root, /data volume, ports, env, config.
#     RILL_DOCKER_PROFILE=debug takes target/debug instead (scripts/test.sh does: what is tested
#     here is the image and the deployment, not the optimiser, and a cold release build with
#     fat LTO costs CI several minutes);
#  3. io_uring: under Docker's default seccomp profile (Engine 25+: ours without the io_uring
#     syscalls) the server serves on the readiness driver and says why, and with
#     IGGY_SYSTEM_IO_DRIVER=io_uring refuses to start with its io_uring error; under the engine's
#     built-in default it serves with no option;
#  4. starts a container with docker/seccomp-io-uring.json (io_uring) and a volume, sends and polls messages
#     from the host with the CLI, replaces the container on the same volume, restarts it, and
#     polls the messages again each time;
#  5. `docker compose up` with docker/docker-compose.yml, with and without
#     docker/docker-compose.io-uring.yml, until its healthcheck reports healthy each time;
#  6. docker/cluster-test.sh: three containers as one cluster (docker-compose.cluster.yml), the
#     leader killed and then cut off from the network under traffic, nothing acknowledged lost.
# Everything it creates (containers, volumes, networks) is removed on exit; the base image, the
# test image (rill/iggy-server:docker-test) and the rootfs cache are kept for the next run.
# Without a reachable Docker engine it prints "skipping Docker test: ..." and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

say() { printf '[docker-test] %s\n' "$*"; }
# The reason is printed again as the very last line, after the containers' logs: a CI log
# that keeps only its tail must still say what failed.
failure=""
fail() {
    failure="$*"
    printf '[docker-test] FAIL: %s\n' "$*" >&2
    exit 1
}

if ! command -v docker >/dev/null 2>&1; then
    say "skipping Docker test: the docker command is not installed"
    exit 0
fi
if ! docker info >/dev/null 2>&1; then
    say "skipping Docker test: no Docker engine is reachable (docker info failed)"
    exit 0
fi

started=$SECONDS
image=rill/iggy-server:docker-test
run_id="rill-docker-test-$$"
user=iggy
password="docker-test-$$"
sudo_cmd=""
[[ $(id -u) -eq 0 ]] || sudo_cmd="sudo"
work=$(mktemp -d)
containers=()
volumes=()
compose_project=""
compose=()

cleanup() {
    local status=$?
    set +e
    if [[ -n $compose_project ]]; then
        # The compose file requires IGGY_ROOT_PASSWORD even to take the service down.
        (cd "$root/docker" && COMPOSE_PROJECT_NAME=$compose_project IGGY_IMAGE=$image \
            IGGY_ROOT_PASSWORD=$password "${compose[@]}" down --volumes --remove-orphans \
            --timeout 20 >/dev/null 2>&1)
    fi
    for container in "${containers[@]}"; do
        if ((status != 0)); then
            # What the server saw, before its container goes: a failure must be explainable.
            say "last log lines of $container:"
            docker logs --tail 60 "$container" 2>&1 | sed 's/^/    /' >&2
        fi
        docker rm --force --volumes "$container" >/dev/null 2>&1
    done
    for volume in "${volumes[@]}"; do
        docker volume rm --force "$volume" >/dev/null 2>&1
    done
    rm -rf "$work"
    if ((status == 0)); then
        say "all Docker checks passed in $((SECONDS - started)) s"
    else
        say "failed after $((SECONDS - started)) s (its containers, volumes and networks are removed): ${failure:-exit status $status}"
    fi
}
trap cleanup EXIT

# --- 1. base image -------------------------------------------------------------------------------

base=$(awk 'toupper($1) == "FROM" { image = $2 } END { print image }' Dockerfile)
[[ $base == debian:bookworm-slim ]] ||
    fail "the Dockerfile's runtime stage starts FROM $base, expected debian:bookworm-slim"
# Bump when the rootfs recipe below changes: an older cache and imported image are then rebuilt.
recipe=2

# True when the engine has the base image: a real one (from a registry), or ours of this recipe.
have_base() {
    local labels
    labels=$(docker image inspect --format '{{json .Config.Labels}}' "$base" 2>/dev/null) || return 1
    [[ $labels != *'"org.rill.rootfs-recipe"'* || $labels == *"\"org.rill.rootfs-recipe\":\"$recipe\""* ]]
}

# slim_rootfs DIR: makes a debootstrapped tree what Debian's official -slim image is: no
# documentation, manuals or translations (also for packages installed later), apt caches removed
# after every apt run, no package lists.
slim_rootfs() {
    local r=$1
    cat >"$r/etc/dpkg/dpkg.cfg.d/docker" <<'END'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
END
    cat >"$r/etc/apt/apt.conf.d/docker-clean" <<'END'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
END
    echo 'Acquire::Languages "none";' >"$r/etc/apt/apt.conf.d/docker-no-languages"
    echo 'Acquire::GzipIndexes "true";' >"$r/etc/apt/apt.conf.d/docker-gzip-indexes"
    echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$r/etc/apt/apt.conf.d/docker-autoremove-suggests"
    cat >"$r/etc/apt/sources.list" <<'END'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
END
    find "$r/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
    find "$r/usr/share/doc" -mindepth 1 -type d -empty -delete
    rm -rf "$r"/usr/share/man/* "$r"/usr/share/groff/* "$r"/usr/share/info/* \
        "$r"/usr/share/lintian/* "$r"/usr/share/linda/* "$r"/usr/share/locale/*
    rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/cache/apt/*.bin "$r"/var/lib/apt/lists/*
    find "$r/var/log" -type f -delete
    rm -f "$r/etc/resolv.conf" "$r/etc/hostname"
    : >"$r/etc/machine-id"
}

if have_base; then
    say "base image $base: present in the engine"
else
    [[ -z $sudo_cmd ]] || sudo -n true 2>/dev/null ||
        fail "building the base image $base needs root (debootstrap): run as root or with passwordless sudo"
    cache="$root/target/docker-rootfs"
    rootfs="$cache/bookworm-slim"
    mkdir -p "$cache"
    exec 9>"$cache/.lock"
    flock 9
    if [[ $(cat "$rootfs.complete" 2>/dev/null) != "$recipe" ]]; then
        if ! command -v debootstrap >/dev/null 2>&1 && [[ ! -x /usr/sbin/debootstrap ]]; then
            say "installing debootstrap"
            $sudo_cmd apt-get update -qq
            DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq debootstrap >/dev/null
        fi
        say "debootstrapping a minimal Debian bookworm into $rootfs (cached for later runs)"
        $sudo_cmd rm -rf "$rootfs" "$rootfs.tmp" "$rootfs.complete"
        if ! $sudo_cmd env PATH="$PATH:/usr/sbin:/sbin" debootstrap --variant=minbase bookworm \
            "$rootfs.tmp" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1; then
            tail -20 "$work/debootstrap.log" >&2
            fail "debootstrap failed"
        fi
        if [[ -z $sudo_cmd ]]; then
            slim_rootfs "$rootfs.tmp"
        else
            sudo bash -euc "$(declare -f slim_rootfs); slim_rootfs \"\$1\"" bash "$rootfs.tmp"
        fi
        $sudo_cmd mv "$rootfs.tmp" "$rootfs"
        echo "$recipe" >"$rootfs.complete"
    fi
    if ! have_base; then
        say "importing $rootfs as $base"
        $sudo_cmd tar --numeric-owner -C "$rootfs" -c . |
            docker import --change 'CMD ["bash"]' \
                --change "LABEL org.rill.rootfs-recipe=$recipe org.rill.origin=docker/test.sh" \
                - "$base" >/dev/null
    fi
    flock -u 9
    exec 9>&-
    say "base image $base: $(($(docker image inspect --format '{{.Size}}' "$base") / 1000 / 1000)) MB"
fi

# --- 2. binaries and image -----------------------------------------------------------------------

profile=${RILL_DOCKER_PROFILE:-release}
case $profile in
    release) profile_flag=(--release) ;;
    debug) profile_flag=() ;;
    *) fail "RILL_DOCKER_PROFILE must be release or debug, not $profile" ;;
esac
binaries="target/$profile"
say "building iggy-server and iggy on the host ($profile)"
if [[ -x scripts/install-deps.sh ]]; then
    scripts/install-deps.sh || fail "scripts/install-deps.sh failed"
fi
command -v cargo >/dev/null 2>&1 || fail "cargo is not on PATH"
cargo build "${profile_flag[@]}" --locked -p rill-server -p rill-cli ||
    fail "cargo build ($profile) failed"
# Docker sees only the build context: binaries built under a CARGO_TARGET_DIR elsewhere are
# copied to where the Dockerfile (and .dockerignore) expect them.
built="$(realpath -m "${CARGO_TARGET_DIR:-target}")/$profile"
if [[ $built != "$(realpath -m "$binaries")" ]]; then
    mkdir -p "$binaries"
    cp "$built/iggy-server" "$built/iggy" "$binaries/" || fail "cannot copy the binaries from $built"
fi
cli="$root/$binaries/iggy"
official="${CARGO_HOME:-$HOME/.cargo}/bin/iggy"
if ! [[ -x $official ]] || [[ $("$official" --version 2>/dev/null) != iggy-cli* ]]; then
    official=""
fi

say "building $image (HOST_BINARIES=$binaries)"
old_image=$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
# The classic builder, as Docker without buildx uses: it builds every stage, which the
# Dockerfile's HOST_BINARIES handling must survive without a Rust image.
if ! DOCKER_BUILDKIT=0 docker build --force-rm --build-arg HOST_BINARIES="$binaries" \
    -t "$image" . >"$work/build.log" 2>&1; then
    tail -40 "$work/build.log" >&2
    fail "docker build failed"
fi
new_image=$(docker image inspect --format '{{.Id}}' "$image")
if [[ -n $old_image && $old_image != "$new_image" ]]; then
    docker image rm "$old_image" >/dev/null 2>&1 || true
fi
# The classic builder keeps each build stage as an untagged image: drop them, not to pile up.
docker image prune --force --filter label=org.rill.stage=build >/dev/null

inspect() { docker image inspect --format "$1" "$image"; }
size=$(inspect '{{.Size}}')
say "image $image: $((size / 1000 / 1000)) MB ($size bytes)"
[[ $(inspect '{{.Config.User}}') == iggy:iggy ]] || fail "the image does not run as user iggy"
uid=$(docker run --rm --entrypoint id "$image" -u)
[[ $uid != 0 ]] || fail "the container runs as root"
[[ $(inspect '{{json .Config.Volumes}}') == *'"/data"'* ]] || fail "/data is not a volume"
ports=$(inspect '{{json .Config.ExposedPorts}}')
[[ $ports == *'"8090/tcp"'* && $ports == *'"8080/udp"'* && $ports == *'"3000/tcp"'* &&
    $ports == *'"8092/tcp"'* ]] ||
    fail "exposed ports are $ports"
env=$(inspect '{{json .Config.Env}}')
[[ $env == *'"IGGY_TCP_ADDRESS=0.0.0.0:8090"'* && $env == *'"IGGY_SYSTEM_PATH=/data"'* &&
    $env == *'"IGGY_HTTP_ADDRESS=0.0.0.0:3000"'* &&
    $env == *'"IGGY_WEBSOCKET_ADDRESS=0.0.0.0:8092"'* ]] ||
    fail "the image does not set IGGY_TCP_ADDRESS/IGGY_HTTP_ADDRESS/IGGY_WEBSOCKET_ADDRESS/IGGY_SYSTEM_PATH: $env"
docker run --rm --entrypoint cat "$image" /etc/iggy/server.toml | cmp -s - configs/server.toml ||
    fail "/etc/iggy/server.toml in the image differs from configs/server.toml"
say "image: runs as uid $uid, volume /data, ports $ports, IGGY_* env, configs/server.toml inside"

# Container rlimits: io_uring rings count against RLIMIT_MEMLOCK (about 0.5 MiB per shard),
# hence memlock unlimited, as docker-compose.yml sets. An engine without CAP_SYS_RESOURCE cannot
# raise limits above its own: use its limits then, and say so.
memlock=-1
nofile=65536
if ! docker run --rm --ulimit memlock=-1:-1 --ulimit "nofile=$nofile:$nofile" --entrypoint true \
    "$image" >/dev/null 2>&1; then
    read -r memlock_kib nofile < <(docker run --rm --entrypoint sh "$image" -c 'echo $(ulimit -H -l) $(ulimit -H -n)')
    if [[ $memlock_kib == unlimited ]]; then memlock=-1; else memlock=$((memlock_kib * 1024)); fi
    say "this engine cannot raise container rlimits above its own (memlock $memlock_kib KiB," \
        "nofile $nofile): using those instead of unlimited/65536, also for compose"
fi
ulimits=(--ulimit "memlock=$memlock:$memlock" --ulimit "nofile=$nofile:$nofile")

# --- helpers -------------------------------------------------------------------------------------

# run_server NAME VOLUME [docker run options...]: starts the server detached, published on a
# random loopback port.
run_server() {
    local name=$1 volume=$2
    shift 2
    containers+=("$name")
    docker run -d --name "$name" -v "$volume:/data" -p 127.0.0.1::8090/tcp -p 127.0.0.1::3000/tcp \
        -e IGGY_ROOT_USERNAME="$user" -e IGGY_ROOT_PASSWORD="$password" \
        "$@" "$image" >/dev/null
}

# host_port CONTAINER [PORT]: the loopback host port that PORT (default 8090/tcp) is published on.
host_port() {
    local mapping
    mapping=$(docker port "$1" "${2:-8090/tcp}" | head -1) && echo "${mapping##*:}"
}

# http_get PORT PATH: body of an HTTP GET to the server's HTTP endpoint published on PORT.
http_get() { curl -fsS --max-time 5 "http://127.0.0.1:$1$2"; }

# iggy_cli PORT ARGS...: our CLI against the server published on PORT.
iggy_cli() {
    local port=$1
    shift
    "$cli" --tcp-server-address "127.0.0.1:$port" --tcp-reconnection-max-retries 0 \
        -u "$user" -p "$password" "$@"
}

# wait_for_server NAME: until the log says it listens and a ping from the host succeeds.
wait_for_server() {
    local name=$1
    for _ in $(seq 1 120); do
        if [[ $(docker inspect --format '{{.State.Running}}' "$name") != true ]]; then
            docker logs "$name" >&2 || true
            fail "container $name exited while starting"
        fi
        if [[ $(docker logs "$name" 2>&1) == *"iggy-server is listening"* ]] &&
            iggy_cli "$(host_port "$name")" ping >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.5
    done
    docker logs "$name" >&2 || true
    fail "container $name did not start serving within 60 s"
}

# check_messages PORT CLIENT: polls the test topic and checks every message sent is there.
check_messages() {
    local port=$1 client=$2 output message
    output=$("$client" --tcp-server-address "127.0.0.1:$port" -u "$user" -p "$password" \
        message poll --offset 0 --message-count 100 docker-test events 0 2>&1) ||
        fail "polling with $client failed: $output"
    for message in "${messages[@]}"; do
        grep -q -- "$message" <<<"$output" ||
            fail "message '$message' missing from the poll ($client): $output"
    done
}

# --- 3. io_uring and seccomp ---------------------------------------------------------------------

# Docker's default profile since Engine 25 = ours without the one line that allows io_uring.
grep -v '"io_uring_setup"' docker/seccomp-io-uring.json >"$work/seccomp-default.json"
if command -v python3 >/dev/null 2>&1; then
    python3 -m json.tool docker/seccomp-io-uring.json >/dev/null ||
        fail "docker/seccomp-io-uring.json is not valid JSON"
    python3 -m json.tool "$work/seccomp-default.json" >/dev/null ||
        fail "the profile without its io_uring line is not valid JSON"
fi
volumes+=("$run_id-scratch")
docker volume create "$run_id-scratch" >/dev/null

# With io_uring blocked, the default (system.io_driver = "auto") serves on the readiness driver
# and says why in one WARN line; messages go through.
blocked=(--security-opt "seccomp=$work/seccomp-default.json")
run_server "$run_id-blocked" "$run_id-scratch" "${blocked[@]}" "${ulimits[@]}"
wait_for_server "$run_id-blocked"
blocked_logs=$(docker logs "$run_id-blocked" 2>&1)
grep -q "io_uring is not available" <<<"$blocked_logs" ||
    fail "with io_uring blocked the server did not say why it falls back: $blocked_logs"
grep -q "docker/seccomp-io-uring.json" <<<"$blocked_logs" ||
    fail "the fallback WARN does not say how to get io_uring back: $blocked_logs"
grep -q "listening for TCP connections.*io_driver=polling" <<<"$blocked_logs" ||
    fail "with io_uring blocked the start-up line does not say io_driver=polling: $blocked_logs"
blocked_port=$(host_port "$run_id-blocked")
iggy_cli "$blocked_port" stream create blocked-test >/dev/null || fail "stream create (polling) failed"
iggy_cli "$blocked_port" topic create blocked-test events 1 none >/dev/null || fail "topic create (polling) failed"
iggy_cli "$blocked_port" message send --partition-id 0 blocked-test events "on-epoll-$$" >/dev/null ||
    fail "message send (polling) failed"
polled=$(iggy_cli "$blocked_port" message poll --offset 0 --message-count 10 blocked-test events 0 2>&1)
grep -q "on-epoll-$$" <<<"$polled" ||
    fail "the message sent on the readiness driver was not polled back: $polled"
say "Docker's default seccomp profile (Engine 25+, io_uring blocked): serves on the readiness driver;" \
    "'$(grep -m1 -o 'io_uring is not available ([^)]*)' <<<"$blocked_logs")'"
docker rm --force "$run_id-blocked" >/dev/null

# Requiring io_uring where it is blocked refuses to start, with the reason and the way out.
containers+=("$run_id-required")
set +e
required_output=$(timeout 60 docker run --name "$run_id-required" -v "$run_id-scratch:/data" \
    "${blocked[@]}" "${ulimits[@]}" -e IGGY_SYSTEM_IO_DRIVER=io_uring \
    -e IGGY_ROOT_USERNAME="$user" -e IGGY_ROOT_PASSWORD="$password" "$image" 2>&1)
required_status=$?
set -e
if ! grep -q "cannot start an io_uring runtime" <<<"$required_output" ||
    ! grep -q "docker/seccomp-io-uring.json" <<<"$required_output"; then
    fail "io_driver=io_uring with io_uring blocked did not print its error (exit $required_status): $required_output"
fi
((required_status != 0)) || fail "io_driver=io_uring with io_uring blocked exited 0: $required_output"
say "IGGY_SYSTEM_IO_DRIVER=io_uring with io_uring blocked: exit $required_status and" \
    "'$(grep -m1 -o 'cannot start an io_uring runtime: [^.]*' <<<"$required_output")'"

# The engine's built-in profile (no --security-opt) blocks io_uring from Engine 25 on and allows
# it before: the server serves either way, on whichever driver it can.
engine_version=$(docker version --format '{{.Server.Version}}' 2>/dev/null || echo unknown)
run_server "$run_id-engine-default" "$run_id-scratch" "${ulimits[@]}"
wait_for_server "$run_id-engine-default"
engine_driver=$(docker logs "$run_id-engine-default" 2>&1 | grep -o 'io_driver=[a-z_]*' | tail -1)
say "engine $engine_version's built-in seccomp profile: the server serves with no option ($engine_driver)"
docker rm --force "$run_id-engine-default" >/dev/null

# --- 4. a container with the profile and a volume, driven from the host --------------------------

volume="$run_id-data"
volumes+=("$volume")
docker volume create "$volume" >/dev/null
seccomp=(--security-opt "seccomp=$root/docker/seccomp-io-uring.json")
run_server "$run_id-1" "$volume" "${seccomp[@]}" "${ulimits[@]}"
wait_for_server "$run_id-1"
port=$(host_port "$run_id-1")
docker logs "$run_id-1" 2>&1 | grep -q "listening for TCP connections.*io_driver=io_uring" ||
    fail "with docker/seccomp-io-uring.json the server does not run on io_uring: $(docker logs "$run_id-1" 2>&1)"
say "server serving in container $run_id-1 (io_uring via docker/seccomp-io-uring.json) on 127.0.0.1:$port"

# Shards pin themselves to one CPU each, with no added capability.
pinned=$(docker exec "$run_id-1" sh -c \
    'for t in /proc/1/task/*; do [ "$(cat "$t/comm")" = shard-0 ] && grep Cpus_allowed_list "$t/status"; done; true')
[[ $pinned =~ Cpus_allowed_list:[[:space:]]*[0-9]+$ ]] || fail "shard-0 is not pinned to one CPU: '$pinned'"
say "shard-0 thread: $pinned"

messages=("docker-test-$$-first" "docker-test-$$-second" "docker-test-$$-third")
iggy_cli "$port" stream create docker-test >/dev/null || fail "stream create failed"
iggy_cli "$port" topic create docker-test events 1 none >/dev/null || fail "topic create failed"
iggy_cli "$port" message send --partition-id 0 docker-test events "${messages[@]}" >/dev/null ||
    fail "message send failed"
check_messages "$port" "$cli"
say "sent ${#messages[@]} messages and polled them back with $binaries/iggy"
if command -v curl >/dev/null 2>&1; then
    http_port=$(host_port "$run_id-1" 3000/tcp)
    [[ $(http_get "$http_port" /ping) == pong* ]] || fail "GET /ping on the HTTP endpoint did not answer pong"
    metrics=$(http_get "$http_port" /metrics) || fail "GET /metrics failed"
    grep -q '^iggy_' <<<"$metrics" || fail "GET /metrics has no iggy_ series: $metrics"
    say "HTTP endpoint published from the container: /ping answers pong, /metrics has iggy_* series"
else
    say "curl is not installed: HTTP endpoint check skipped"
fi
if [[ -n $official ]]; then
    check_messages "$port" "$official"
    say "polled them with the official iggy-cli too ($official)"
fi

# docker stop sends SIGTERM: the server drains and flushes, then exits 0.
docker stop --time 30 "$run_id-1" >/dev/null
exit_code=$(docker inspect --format '{{.State.ExitCode}}' "$run_id-1")
[[ $exit_code == 0 ]] || fail "the server exited with $exit_code on docker stop"
docker rm "$run_id-1" >/dev/null
run_server "$run_id-2" "$volume" "${seccomp[@]}" "${ulimits[@]}"
wait_for_server "$run_id-2"
check_messages "$(host_port "$run_id-2")" "$cli"
say "docker stop (exit 0), then a new container on volume $volume: all messages polled again"
docker restart --time 30 "$run_id-2" >/dev/null
wait_for_server "$run_id-2"
check_messages "$(host_port "$run_id-2")" "$cli"
say "docker restart: all messages still there"
docker rm --force "$run_id-2" >/dev/null

# --- 5. docker compose ---------------------------------------------------------------------------

if docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
    compose=(docker-compose)
else
    fail "neither 'docker compose' nor 'docker-compose' is installed"
fi
compose_project="$run_id"
say "${compose[*]} refuses to start without IGGY_ROOT_PASSWORD"
if (cd docker && env -u IGGY_ROOT_PASSWORD IGGY_IMAGE=$image "${compose[@]}" config >"$work/compose-nopass.log" 2>&1); then
    fail "compose accepted a configuration without IGGY_ROOT_PASSWORD"
fi
grep -q "IGGY_ROOT_PASSWORD" "$work/compose-nopass.log" || fail "compose's refusal does not name IGGY_ROOT_PASSWORD"
# compose_up FILE...: `compose up` with these files until the service is healthy; prints the
# container's id. The same project each time: a later call replaces the earlier service.
compose_up() {
    local files=() file container health
    for file in "$@"; do files+=(-f "$file"); done
    if ! (
        cd docker
        export COMPOSE_PROJECT_NAME=$compose_project IGGY_IMAGE=$image IGGY_PUBLISH_ADDRESS=127.0.0.1 \
            IGGY_TCP_PORT="" IGGY_QUIC_PORT="" IGGY_HTTP_PORT="" IGGY_MEMLOCK=$memlock IGGY_NOFILE=$nofile \
            IGGY_ROOT_USERNAME=$user IGGY_ROOT_PASSWORD=$password
        "${compose[@]}" "${files[@]}" up -d --no-build --force-recreate
    ) >"$work/compose.log" 2>&1; then
        cat "$work/compose.log" >&2
        fail "${compose[*]} ${files[*]} up failed"
    fi
    container=$(docker ps --all --quiet --filter "label=com.docker.compose.project=$compose_project" | head -1)
    [[ -n $container ]] || fail "compose started no container"
    health=""
    for _ in $(seq 1 90); do
        health=$(docker inspect --format '{{if .State.Health}}{{.State.Health.Status}}{{end}}' "$container")
        [[ $health == healthy || $health == unhealthy ]] && break
        sleep 1
    done
    if [[ $health != healthy ]]; then
        docker inspect --format '{{json .State.Health}}' "$container" >&2 || true
        docker logs "$container" >&2 || true
        fail "the compose service's health is '$health', expected healthy"
    fi
    iggy_cli "$(host_port "$container")" ping >/dev/null || fail "ping to the compose service's published port failed"
    echo "$container"
}

say "${compose[*]} up -d with docker/docker-compose.yml and docker-compose.io-uring.yml (project $compose_project)"
container=$(compose_up docker-compose.yml docker-compose.io-uring.yml)
docker logs "$container" 2>&1 | grep -q "listening for TCP connections.*io_driver=io_uring" ||
    fail "compose with docker-compose.io-uring.yml does not run on io_uring"
say "compose with the io_uring profile: healthy (healthcheck: iggy ping with the root credentials), io_driver=io_uring"
say "${compose[*]} up -d with docker/docker-compose.yml alone (Docker's default seccomp profile)"
container=$(compose_up docker-compose.yml)
compose_driver=$(docker logs "$container" 2>&1 | grep -o 'io_driver=[a-z_]*' | tail -1)
say "compose without the profile: healthy, $compose_driver"

# --- 6. a three-node cluster ---------------------------------------------------------------------

cluster_failure="$work/cluster-failure"
IGGY_MEMLOCK=$memlock IGGY_NOFILE=$nofile RILL_FAILURE_FILE=$cluster_failure \
    docker/cluster-test.sh "$image" "$cli" ||
    fail "docker/cluster-test.sh: $(cat "$cluster_failure" 2>/dev/null || echo "failed (its output above)")"
