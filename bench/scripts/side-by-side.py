#!/usr/bin/env python3
"""Medians and ratios of side-by-side.sh runs: side-by-side.py OUT_DIR STAMP.

Reads the "... Results:" lines upstream's iggy-bench prints (per kind: producers, consumers,
aggregate) and the server CPU and peak RSS the script appended to each run's log, and prints
per workload and kind the median over the rounds of each side, the rounds themselves, and
ours / upstream.
"""
import glob
import os
import re
import statistics
import sys

out, stamp = sys.argv[1], sys.argv[2]
RESULT = re.compile(
    r"(?P<kind>Producers|Consumers|Aggregate|Producing Consumer) Results: Total throughput: "
    r"(?P<mbs>[\d.]+) MB/s, (?P<msgs>\d+) messages/s.*?p50 latency: (?P<p50>[\d.]+) ms.*?"
    r"p99 latency: (?P<p99>[\d.]+) ms"
)
USAGE = re.compile(r"server_cpu_ticks (\d+) server_peak_rss_kib (\d+)")
TICKS = os.sysconf("SC_CLK_TCK")

runs = {}  # (workload, side) -> list of {kind: figures}
for path in sorted(glob.glob(f"{out}/{stamp}_*.log")):
    name = os.path.basename(path)[: -len(".log")]
    parts = name.split("_")
    if "." in name or len(parts) != 4:
        continue  # .server.log and .setup.log
    _, workload, side, _round = parts
    text = open(path, errors="replace").read()
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    figures = {}
    for match in RESULT.finditer(text):
        figures[match["kind"]] = {k: float(match[k]) for k in ("mbs", "msgs", "p50", "p99")}
    usage = USAGE.search(text)
    if usage:
        figures["server"] = {
            "cpu_s": int(usage[1]) / TICKS,
            "rss_mib": int(usage[2]) / 1024,
        }
    runs.setdefault((workload, side), []).append(figures)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=0):
    return "-" if value is None else f"{value:,.{digits}f}"


workloads = sorted({w for w, _ in runs}, key=lambda w: min(
    os.path.getmtime(p) for p in glob.glob(f"{out}/{stamp}_{w}_*.log")))
for workload in workloads:
    sides = sorted({s for w, s in runs if w == workload}, key=lambda s: (s == "upstream", s))
    kinds = []
    for side in sides:
        for figures in runs[(workload, side)]:
            for kind in figures:
                if kind != "server" and kind not in kinds:
                    kinds.append(kind)
    counts = ", ".join(f"{len(runs[(workload, s)])} {s}" for s in sides)
    print(f"\n{workload}: rounds {counts}")
    for kind in kinds:
        row = {}
        for side in sides:
            side_runs = runs[(workload, side)]
            per_run = [r[kind] for r in side_runs if kind in r]
            row[side] = {
                key: median([r[key] for r in per_run]) for key in ("mbs", "msgs", "p50", "p99")
            }
            row[side]["rounds"] = [r["mbs"] if r["mbs"] >= 100 else r["msgs"] for r in per_run]
        unit = "MB/s" if max((r["mbs"] or 0) for r in row.values()) >= 100 else "msgs/s"
        key = "mbs" if unit == "MB/s" else "msgs"
        for side in sides:
            r = row[side]
            rounds = ", ".join(fmt(v) for v in r["rounds"])
            print(
                f"  {kind:<10} {side:<12} {fmt(r[key]):>9} {unit} ({rounds}), "
                f"p50 {fmt(r['p50'], 3)} ms, p99 {fmt(r['p99'], 3)} ms"
            )
        b = row.get("upstream", {}).get(key)
        for side in sides:
            a = row[side][key]
            if side != "upstream" and a and b:
                print(f"  {kind:<10} {side} / upstream {a / b:.2f}")
    for side in sides:
        side_runs = runs[(workload, side)]
        cpu = median([r["server"]["cpu_s"] for r in side_runs if "server" in r])
        rss = median([r["server"]["rss_mib"] for r in side_runs if "server" in r])
        print(f"  server {side:<12} CPU {fmt(cpu, 2)} s, peak RSS {fmt(rss)} MiB (medians)")
