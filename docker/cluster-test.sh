#!/usr/bin/env bash
# Docker cluster test: three containers of the image as one cluster (docker-compose.cluster.yml),
# driven from the host with the CLI:
#  1. `compose up`: the nodes elect a leader, the first leader creates the root user, every node
#     turns healthy and, once it has applied that user, logs it in;
#  2. a stream and topic made through one node, messages sent through another, polled through
#     the third;
#  3. `docker kill` of the leader: the survivors take messages again (retried until then),
#     elect another leader and take a metadata change (a topic); everything acknowledged is
#     polled back;
#  4. the killed node restarted, then the new leader cut off with `docker network disconnect`:
#     the two others (the restarted one among them) go on; reconnected, it catches up;
#  5. every message acknowledged is polled back through every node.
# Usage: docker/cluster-test.sh IMAGE CLI (docker/test.sh passes the image it built and the
# host-built CLI). Everything it creates is removed on exit.
set -euo pipefail
cd "$(dirname "$0")"
image=$1
cli=$2

say() { printf '[docker-cluster-test] %s\n' "$*"; }
# The reason goes to RILL_FAILURE_FILE too (docker/test.sh repeats it as its last line) and is
# printed again after the nodes' logs.
failure=""
fail() {
    failure="$*"
    printf '[docker-cluster-test] FAIL: %s\n' "$*" >&2
    [[ -z ${RILL_FAILURE_FILE:-} ]] || printf '%s\n' "$*" >"$RILL_FAILURE_FILE"
    exit 1
}

if docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
    compose=(docker-compose)
else
    fail "neither 'docker compose' nor 'docker-compose' is installed"
fi
started=$SECONDS
export COMPOSE_PROJECT_NAME="rill-cluster-test-$$"
export IGGY_IMAGE=$image
export IGGY_ROOT_PASSWORD="cluster-test-$$"
export IGGY_CLUSTER_SECRET="cluster-test-secret-$$-abcdefghijklmnopqrstuvwxyz"
network="${COMPOSE_PROJECT_NAME}_cluster"
dc() { "${compose[@]}" -f docker-compose.cluster.yml "$@"; }

cleanup() {
    local status=$?
    set +e
    if ((status != 0)); then
        for node in node-0 node-1 node-2; do
            say "last log lines of $node:"
            dc logs --no-color --tail 40 "$node" 2>&1 | sed 's/^/    /' >&2
        done
    fi
    dc down --volumes --remove-orphans --timeout 20 >/dev/null 2>&1
    if ((status == 0)); then
        say "all cluster checks passed in $((SECONDS - started)) s"
    else
        say "failed after $((SECONDS - started)) s: ${failure:-exit status $status}" >&2
    fi
}
trap cleanup EXIT

container() { dc ps -q "$1"; }
port() {
    local mapping
    mapping=$(docker port "$(container "$1")" 8090/tcp | head -1) && echo "${mapping##*:}"
}
# cli NODE ARGS...: the CLI against NODE's published port.
on() {
    local node=$1
    shift
    "$cli" --tcp-server-address "127.0.0.1:$(port "$node")" --tcp-reconnection-max-retries 0 \
        -u iggy -p "$IGGY_ROOT_PASSWORD" "$@"
}
# until_ok SECONDS NODE ARGS...: retries a CLI command (an election may be under way).
until_ok() {
    local limit=$1 output
    shift
    local deadline=$((SECONDS + limit))
    until output=$(on "$@" 2>&1); do
        ((SECONDS < deadline)) || fail "'$*' failed for $limit s: $output"
        sleep 0.5
    done
}
# leader NODE [NOT]: the name of the node NODE says leads (other than NOT), asked until it names
# one (an election may be under way) for up to 30 s; fails (status 1, nothing printed) if none
# is named by then.
leader() {
    local output name deadline=$((SECONDS + 30))
    while :; do
        if output=$(on "$1" cluster metadata --list-mode list 2>&1); then
            name=$(awk -F'|' '$7 == "leader" { print $1; exit }' <<<"$output")
            [[ -z $name || $name == "${2:-}" ]] || { echo "$name"; return 0; }
        fi
        ((SECONDS < deadline)) || return 1
        sleep 0.5
    done
}

messages=()
# send NODE TEXT: sends one message (retried through elections); it counts as acknowledged.
send() {
    until_ok 60 "$1" message send --partition-id 0 cluster-test events "$2"
    messages+=("$2")
}
# check NODE: polls through NODE (retried while the poll itself fails: a follower may not know
# the new leader yet) and fails unless every acknowledged message is there.
check() {
    local output message deadline=$((SECONDS + 30))
    until output=$(on "$1" message poll --offset 0 --message-count 1000 cluster-test events 0 2>&1); do
        ((SECONDS < deadline)) || fail "polling through $1 failed for 30 s: $output"
        sleep 0.5
    done
    for message in "${messages[@]}"; do
        grep -q -- "$message" <<<"$output" || fail "message '$message' missing from the poll through $1: $output"
    done
}

say "${compose[*]} up -d with docker-compose.cluster.yml (project $COMPOSE_PROJECT_NAME)"
dc up -d --no-build >/dev/null 2>&1 || { dc up -d --no-build; fail "compose up failed"; }
# `me` logs in: a node answers ping before it has the root user (the leader creates it after
# the first election, then every node applies it).
for node in node-0 node-1 node-2; do
    until_ok 90 "$node" me
done
deadline=$((SECONDS + 60))
until [[ $(docker inspect --format '{{.State.Health.Status}}' "$(container node-2)") == healthy ]]; do
    ((SECONDS < deadline)) || fail "node-2 is not healthy"
    sleep 1
done
first=$(leader node-0) || fail "node-0 named no leader for 30 s: $(on node-0 cluster metadata 2>&1)"
say "three nodes healthy, $first leads"

until_ok 30 node-0 stream create cluster-test
until_ok 30 node-0 topic create cluster-test events 1 none
for n in 1 2 3; do send node-1 "cluster-$$-before-$n"; done
check node-2
say "stream and topic made through node-0, messages sent through node-1 and polled through node-2"

docker kill "$(container "$first")" >/dev/null
others=()
for node in node-0 node-1 node-2; do [[ $node == "$first" ]] || others+=("$node"); done
killed=$SECONDS
for n in 1 2 3; do send "${others[0]}" "cluster-$$-after-kill-$n"; done
say "docker kill $first: ${others[0]} took messages again after $((SECONDS - killed)) s"
check "${others[1]}"
# The partition may be led by a survivor, so the messages above need no election; metadata
# does: the survivors elect another leader and take a metadata change.
successor=$(leader "${others[0]}" "$first") ||
    fail "the survivors elected no leader for 30 s after $first was killed: $(on "${others[0]}" cluster metadata 2>&1)"
until_ok 30 "${others[1]}" topic create cluster-test after-kill 1 none
say "$successor leads after $((SECONDS - killed)) s and took a topic created through ${others[1]}"

docker start "$(container "$first")" >/dev/null
until_ok 90 "$first" me
second=$(leader "${others[0]}") ||
    fail "${others[0]} named no leader for 30 s after the restart: $(on "${others[0]}" cluster metadata 2>&1)"
docker network disconnect "$network" "$(container "$second")"
rest=()
for node in node-0 node-1 node-2; do [[ $node == "$second" ]] || rest+=("$node"); done
for n in 1 2 3; do send "${rest[0]}" "cluster-$$-partitioned-$n"; done
check "${rest[1]}"
say "$first restarted; $second (leader) disconnected: ${rest[*]} took and served messages"
docker network connect "$network" "$(container "$second")"
for node in node-0 node-1 node-2; do
    until_ok 90 "$node" me
    check "$node"
done
say "$second reconnected: all ${#messages[@]} acknowledged messages polled through every node"
