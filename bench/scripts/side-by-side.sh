#!/usr/bin/env bash
# Runs issue 18's workloads with upstream's own iggy-bench against rill's server and upstream's
# server, alternated (ours, upstream, ours, ...), each run on a fresh server with an empty data
# directory, and prints the medians and ratios (side-by-side.py). Every run's output is kept.
#
#   UPSTREAM=/path/to/upstream/release OURS=target/release ROUNDS=3 bench/scripts/side-by-side.sh [WORKLOAD...]
#
# WORKLOAD (default: all of them, in this order):
#   consumers   2 GB by `pinned-producer -p 2` (not measured), then
#               `--reuse-streams pinned-consumer -c 2` over the same 2 GB
#   ppc         `-T 2GB pinned-producer-and-consumer -p 2 -c 2`
#   bpcg        `-P 100 -T 1GB balanced-producer-and-consumer-group -p 4 -c 4`
#   single      `-P 1 -b 20000 pinned-producer -p 1 tcp --nodelay`
#   small1      `-P 10 -b 20000 pinned-producer -p 1 tcp --nodelay`
#   small8      `-P 10 -b 5000 pinned-producer -p 8 tcp --nodelay`
#
# Environment:
#   UPSTREAM  directory with upstream's release iggy-server and iggy-bench (server-0.8.0, built by
#             ../shared/tools/build-upstream.sh); its iggy-bench drives both servers
#   OURS      directory with rill's release iggy-server (default target/release)
#   DATA      where the servers' data directories are made (default ./side-by-side-data): the real
#             disk, not a tmpfs
#   OUT       where every run's output goes (default ./side-by-side-results)
#   ROUNDS    rounds per workload (default 3)
#   OURS_ENV  extra environment for rill's server, e.g. "IGGY_SYSTEM_PARTITION_ACK_MODE=fsync"
#   SETTLE    seconds to wait after a server stopped and its data was removed (default 5): memory
#             a process or the page cache frees goes back to the hypervisor after about 2 s on
#             VMs with free page reporting, and the next server must not start on the previous
#             one's warm pages while the other side starts on cold ones
#   SIDES     the servers each round runs, in order (default "ours upstream"); "ours-MODE" is rill
#             with IGGY_SYSTEM_PARTITION_ACK_MODE=MODE (memory, written, fsync), e.g.
#             SIDES="ours ours-memory upstream" for the durable one-message floor; "LABEL@DIR" is
#             another build of rill's server in DIR (to compare two builds side by side)
set -euo pipefail
SCRIPTS=$(dirname "$(realpath "$0")")
: "${UPSTREAM:?set UPSTREAM to the directory of the upstream release binaries}"
UPSTREAM=$(realpath "$UPSTREAM")
OURS=$(realpath "${OURS:-target/release}")
DATA=$(realpath -m "${DATA:-side-by-side-data}")
OUT=$(realpath -m "${OUT:-side-by-side-results}")
ROUNDS=${ROUNDS:-3}
OURS_ENV=${OURS_ENV:-}
SIDES=${SIDES:-ours upstream}
SETTLE=${SETTLE:-5}
WORKLOADS=("$@")
[[ ${#WORKLOADS[@]} -gt 0 ]] || WORKLOADS=(consumers ppc bpcg single small1 small8)
BENCH="$UPSTREAM/iggy-bench"
mkdir -p "$DATA" "$OUT"

PID=
SERVER_DATA=
# Stops the server and removes its data, so that neither its memory nor its page cache is left
# for the next server (upstream's data lives in the page cache, rill's in its own memory).
stop_server() {
    if [[ -n $PID ]]; then
        kill "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
        PID=
    fi
    if [[ -n $SERVER_DATA ]]; then
        rm -rf "$SERVER_DATA"
        SERVER_DATA=
        sleep "$SETTLE"
    fi
}
trap stop_server EXIT

# Starts one side's server on 127.0.0.1:8090 with an empty data directory; only TCP is on.
start_server() {
    local side=$1 log=$2 bin=$OURS
    if [[ $side == *@* ]]; then
        bin=${side#*@}
        side=${side%%@*}
    fi
    rm -rf "$DATA/$side"
    mkdir -p "$DATA/$side"
    SERVER_DATA="$DATA/$side"
    local common=(IGGY_SYSTEM_PATH="$DATA/$side" IGGY_TCP_ADDRESS=127.0.0.1:8090
        IGGY_HTTP_ENABLED=false IGGY_QUIC_ENABLED=false IGGY_WEBSOCKET_ENABLED=false)
    if [[ $side != upstream ]]; then
        local mode=()
        [[ $side == ours-* ]] && mode=(IGGY_SYSTEM_PARTITION_ACK_MODE="${side#ours-}")
        # shellcheck disable=SC2086 # OURS_ENV is a list of assignments
        (cd "$DATA/$side" && exec env "${common[@]}" $OURS_ENV "${mode[@]}" "$bin/iggy-server" \
            --with-default-root-credentials) >"$log" 2>&1 &
    else
        (cd "$DATA/$side" && exec env "${common[@]}" IGGY_ROOT_USERNAME=iggy \
            IGGY_ROOT_PASSWORD=iggy "$UPSTREAM/iggy-server") >"$log" 2>&1 &
    fi
    PID=$!
    for _ in $(seq 200); do
        (echo >/dev/tcp/127.0.0.1/8090) 2>/dev/null && { sleep 1; return; }
        sleep 0.1
    done
    echo "the $side server did not start; see $log" >&2
    exit 1
}

# The unmeasured setup and the measured command line of a workload.
setup_of() {
    case $1 in
        consumers) echo "-m 1000 -P 1000 -T 2GB pinned-producer -p 2 tcp" ;;
        *) echo "" ;;
    esac
}
command_of() {
    case $1 in
        consumers) echo "-m 1000 -P 1000 -T 2GB --reuse-streams pinned-consumer -c 2 tcp" ;;
        ppc) echo "-m 1000 -P 1000 -T 2GB pinned-producer-and-consumer -p 2 -c 2 tcp" ;;
        bpcg) echo "-m 1000 -P 100 -T 1GB balanced-producer-and-consumer-group -p 4 -c 4 tcp" ;;
        single) echo "-m 1000 -P 1 -b 20000 pinned-producer -p 1 tcp --nodelay" ;;
        small1) echo "-m 1000 -P 10 -b 20000 pinned-producer -p 1 tcp --nodelay" ;;
        small8) echo "-m 1000 -P 10 -b 5000 pinned-producer -p 8 tcp --nodelay" ;;
        *) echo "unknown workload $1" >&2; exit 2 ;;
    esac
}

stamp=$(date -u +%Y%m%d-%H%M%S)
for workload in "${WORKLOADS[@]}"; do
    measured=$(command_of "$workload")
    setup=$(setup_of "$workload")
    for round in $(seq "$ROUNDS"); do
        for side in $SIDES; do
            run="$OUT/${stamp}_${workload}_${side%%@*}_${round}"
            start_server "$side" "$run.server.log"
            if [[ -n $setup ]]; then
                # shellcheck disable=SC2086 # word splitting of the command line is wanted
                "$BENCH" $setup >"$run.setup.log" 2>&1
            fi
            cpu_before=$(awk '{print $14 + $15}' "/proc/$PID/stat")
            # shellcheck disable=SC2086
            "$BENCH" $measured >"$run.log" 2>&1 || echo "run failed: $run.log" >&2
            cpu_after=$(awk '{print $14 + $15}' "/proc/$PID/stat")
            rss=$(awk '/VmHWM/ {print $2}' "/proc/$PID/status")
            echo "server_cpu_ticks $((cpu_after - cpu_before)) server_peak_rss_kib $rss" >>"$run.log"
            stop_server
            grep -h "Results:" "$run.log" | sed "s/^/$workload ${side%%@*} $round: /" | cut -c1-220
        done
    done
done
python3 "$SCRIPTS/side-by-side.py" "$OUT" "$stamp"
