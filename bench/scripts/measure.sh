#!/usr/bin/env bash
# Runs the issue-7 target workloads against a release `iggy-server` in one ack mode and prints
# the median of each figure over RUNS runs. Every run's report stays under $OUT.
#
#   MODE=memory RUNS=3 bench/scripts/measure.sh
#
# Environment:
#   MODE      memory | written | fsync (default memory): IGGY_SYSTEM_PARTITION_ACK_MODE of the server
#   RUNS      repetitions of each workload (default 3)
#   BIN       directory holding release iggy-server and iggy-bench (default target/release)
#   DATA      the server's working directory (local_data is created inside; default ./bench-data):
#             put it on the real disk, not on a tmpfs /tmp
#   OUT       results directory (default performance_results); a baseline.json there (from
#             `iggy-bench baseline -o $OUT`) makes every report quote its ceilings
#   TOTAL     data of the throughput runs (default 2GB), LATENCY_TIME of the 1-message runs (20s)
#   QUIET_LOAD  before each workload, wait (up to QUIET_WAIT seconds, default 300) until the 1-minute
#             load average is below this (default 1.5): the machine is shared, and a compiler on
#             the other core changes every figure
set -euo pipefail
SCRIPTS=$(dirname "$(realpath "$0")")
MODE=${MODE:-memory}
RUNS=${RUNS:-3}
BIN=$(realpath "${BIN:-target/release}")
DATA=$(realpath -m "${DATA:-bench-data}")
OUT=$(realpath -m "${OUT:-performance_results}")
TOTAL=${TOTAL:-2GB}
LATENCY_TIME=${LATENCY_TIME:-20s}
QUIET_LOAD=${QUIET_LOAD:-1.5}
QUIET_WAIT=${QUIET_WAIT:-300}
mkdir -p "$DATA" "$OUT"
rm -rf "$DATA/local_data"

cd "$DATA"
IGGY_SYSTEM_PARTITION_ACK_MODE=$MODE "$BIN/iggy-server" --with-default-root-credentials \
    >"$OUT/server-$MODE.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    (echo >/dev/tcp/127.0.0.1/8090) 2>/dev/null && break
    sleep 0.1
done
sleep 1
echo "server pid $PID, ack mode $MODE, idle RSS $(awk '/VmRSS/ {print $2, $3}' /proc/$PID/status)"

wait_quiet() {
    local waited=0
    while awk -v limit="$QUIET_LOAD" '{exit !($1 >= limit)}' /proc/loadavg && [ "$waited" -lt "$QUIET_WAIT" ]; do
        sleep 5
        waited=$((waited + 5))
    done
    echo "    (load $(cut -d' ' -f1-3 /proc/loadavg) after waiting ${waited}s)" >&2
}
bench() { wait_quiet; "$BIN/iggy-bench" -q --ack-mode "$MODE" --server-pid "$PID" "$@"; }
for run in $(seq "$RUNS"); do
    echo "--- run $run: $(uptime)"
    bench -m 1000 -P 1000 -T "$TOTAL" pinned-producer -p 2 tcp \
        output -o "$OUT" --remark "$MODE-producers-$run" | { grep -E "producers \(total\)|% of the lower" || true; }
    bench -m 1000 -P 1000 -T "$TOTAL" --reuse-streams pinned-consumer -c 2 tcp \
        output -o "$OUT" --remark "$MODE-consumers-$run" | { grep -E "consumers \(total\)|% of loopback" || true; }
    bench -m 1000 -P 1 -d "$LATENCY_TIME" pinned-producer -p 1 tcp \
        output -o "$OUT" --remark "$MODE-single-$run" | { grep -E "producers \(total\)" || true; }
done
echo "RSS after the runs: $(awk '/VmRSS/ {print $2, $3}' /proc/$PID/status)"
python3 "$SCRIPTS/summarise.py" "$OUT" "$MODE"
