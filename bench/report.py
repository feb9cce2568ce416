#!/usr/bin/python3
"""Turns reader_bench's JSON and the probes into the markdown table README.md carries.

    report.py BENCH_DIR NPROC
"""
import collections
import json
import os
import platform
import statistics
import sys

folder = sys.argv[1]
models = ["llm-320g", "llm-7b-ext", "llm-2g", "graph-heavy"]

bench = {}
with open(os.path.join(folder, "reader.json")) as f:
    for row in json.load(f)["benchmarks"]:
        if row.get("aggregate_name") == "median":
            bench[row["run_name"]] = row

probes = collections.defaultdict(list)
with open(os.path.join(folder, "probes.txt")) as f:
    for line in f:
        model, mode, ms, rss, *index = line.split()
        probes[(model, mode)].append((ms, rss, index[0] if index else "0"))


def probe(model, mode):
    """(median ms, median peak RSS MiB), or None when the reader cannot open the file."""
    rows = probes[(model, mode)]
    if not rows or rows[0][0] in ("cannot-open", "parse-failed"):
        return None
    return (statistics.median(float(r[0]) for r in rows),
            statistics.median(int(r[1]) for r in rows) / 1024,
            statistics.median(int(r[2]) for r in rows) / 1024)


def bench_ms(name, model):
    # Open, close and peek report only the timed part of each iteration (manual time).
    row = bench.get(f"{name}/{model}/real_time") or bench.get(f"{name}/{model}/manual_time")
    if row is None:
        return None
    scale = {"ms": 1, "us": 1e-3, "ns": 1e-6}[row["time_unit"]]
    return row["real_time"] * scale


def fmt_ms(v):
    return "cannot open" if v is None else (f"{v:.3f}" if v < 10 else f"{v:.0f}")


def ratio(a, b):
    """How many times faster `a` is than `b` (below 1: slower)."""
    if a is None or b is None or a == 0:
        return "-"
    r = b / a
    return f"{r:.0f}x" if r >= 10 else f"{r:.2f}x"


size = {m: os.path.getsize(os.path.join(folder, m + ".onnx")) for m in models}
print(f"Machine: {platform.machine()}, {sys.argv[2]} cores, {platform.system()} "
      f"{platform.release()}. Medians of 5 runs (bench) and of 3 fresh processes (RSS).\n")
print("| model | file | onnxmap open ms | close ms | peek ms | lookup ns | libprotobuf parse ms | "
      "python onnx.load ms | open speed-up vs libprotobuf | onnxmap open RSS MiB | "
      "onnxmap index MiB | libprotobuf RSS MiB | python RSS MiB |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for m in models:
    open_ms = bench_ms("onnxmap_open", m)
    close_ms = bench_ms("onnxmap_close", m)
    peek = bench_ms("onnxmap_peek", m)
    lookup = bench_ms("onnxmap_lookup", m)
    pb = bench_ms("protobuf_parse", m)
    py = probe(m, "python-onnx-load")
    o_rss = probe(m, "onnxmap-open")
    pb_rss = probe(m, "protobuf-parse")
    print(f"| {m} | {size[m] / 2**30:.2f} GiB | {fmt_ms(open_ms)} | {fmt_ms(close_ms)} | "
          f"{fmt_ms(peek)} | "
          f"{lookup * 1e6:.0f} | {fmt_ms(pb)} | {fmt_ms(py[0] if py else None)} | "
          f"{ratio(open_ms, pb)} | {o_rss[1]:.1f} | {o_rss[2]:.1f} | "
          f"{'-' if pb_rss is None else f'{pb_rss[1]:.0f}'} | {'-' if py is None else f'{py[1]:.0f}'} |")
