#!/usr/bin/env python3
"""Medians of the figures of `measure.sh` runs: summarise.py RESULTS_DIR MODE."""
import glob
import json
import statistics
import sys

out, mode = sys.argv[1], sys.argv[2]


def reports(kind):
    paths = sorted(glob.glob(f"{out}/*_{mode}-{kind}-*/report.json"))
    return [json.load(open(path)) for path in paths]


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def row(label, runs, group_kind, fraction_of=None):
    if not runs:
        return
    groups = [next(g for g in r["groups"] if g["kind"] == group_kind) for r in runs]
    usage = [r.get("server_usage") or {} for r in runs]
    text = (
        f"{label:<34} runs {len(runs)}  MB/s {median(g['total_throughput_mb_s'] for g in groups):8.1f}"
        f" (wall {median(g['wall_throughput_mb_s'] for g in groups):7.1f})"
        f"  msgs/s {median(g['total_throughput_msgs_s'] for g in groups):10.0f}"
        f"  p50 {median(g['latency']['p50_ms'] for g in groups):7.3f}"
        f"  p99 {median(g['latency']['p99_ms'] for g in groups):7.3f}"
        f"  p99.9 {median(g['latency']['p999_ms'] for g in groups):7.3f}"
        f"  max {median(g['latency']['max_ms'] for g in groups):7.3f} ms"
        f"  RSS max {median(u.get('rss_max_mib') for u in usage):6.1f} MiB"
        f"  CPU {median(u.get('cpu_cores_avg') for u in usage):4.2f} cores"
    )
    if fraction_of:
        fractions = []
        for r in runs:
            for f in (r.get("ceilings") or {}).get("fractions", []):
                if f["kind"] == group_kind and f["ceiling"] == fraction_of:
                    fractions.append(f["fraction"])
        if fractions:
            text += f"  = {100 * median(fractions):.1f}% of {fraction_of}"
    print(text)
    for r, g in zip(runs, groups):
        print(f"    {r['started_at']}  {g['total_throughput_mb_s']:8.1f} MB/s  p99 {g['latency']['p99_ms']:.3f} ms")


print(f"ack mode {mode}, medians:")
row("2 producers, 1000 B x 1000/batch", reports("producers"), "producer",
    "the lower of O_DIRECT write and loopback TCP")
row("2 consumers reading it back", reports("consumers"), "consumer", "loopback TCP")
row("1 producer, 1 message/batch", reports("single"), "producer")
