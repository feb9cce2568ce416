#!/usr/bin/python3
"""Turns reader_bench's JSON and the probes into the markdown tables README.md carries.

    report.py BENCH_DIR NPROC

Ratios against a physical limit read "onnxmap / limit" (1x would be the limit itself); ratios
against another reader read "speed-up" (its time / onnxmap's: above 1, onnxmap is faster).
"""
import collections
import json
import math
import os
import platform
import statistics
import sys

folder = sys.argv[1]
models = ["llm-320g", "llm-7b-ext", "llm-2g", "graph-heavy"]
# Not read by onnxmap_read_all_* (bench/read_all_bench.cpp says why).
READ_ALL_SKIPPED = {"llm-320g": "skipped: the first tensor alone is 3.9 GiB of holes, and "
                                "python cannot open the file"}


def plain_name(run_name):
    """The run name without its settings: "onnxmap_fetch_cold/llm-2g/iterations:2/repeats:3/
    manual_time" -> "onnxmap_fetch_cold/llm-2g"."""
    settings = ("iterations:", "repeats:", "real_time", "manual_time")
    return "/".join(p for p in run_name.split("/") if not p.startswith(settings))


runs = collections.defaultdict(list)
medians = {}
with open(os.path.join(folder, "reader.json")) as f:
    for row in json.load(f)["benchmarks"]:
        if row.get("error_occurred"):
            continue
        if row.get("aggregate_name") == "median":
            medians[plain_name(row["run_name"])] = row
        elif row.get("run_type") == "iteration":
            runs[plain_name(row["run_name"])].append(row)

# "model mode ms peak_rss_kib [third]": the third column is the index KiB of onnxmap-open and the
# bytes materialised of python-onnx-materialise.
probes = collections.defaultdict(list)
with open(os.path.join(folder, "probes.txt")) as f:
    for line in f:
        model, mode, ms, rss, *index = line.split()
        probes[(model, mode)].append((ms, rss, index[0] if index else "0"))


def probe(model, mode):
    """(median ms, median peak RSS MiB, median index MiB), or None when it cannot open the file."""
    rows = probes[(model, mode)]
    if not rows or rows[0][0] in ("cannot-open", "parse-failed"):
        return None
    return (statistics.median(float(r[0]) for r in rows),
            statistics.median(int(r[1]) for r in rows) / 1024,
            statistics.median(int(r[2]) for r in rows) / 1024)


def probe_column(model, mode, column):
    """One more column of the first probe line (the bytes python materialised), or None."""
    rows = probes[(model, mode)]
    try:
        return int(rows[0][column])
    except (IndexError, ValueError):
        return None


def row_of(name):
    """The median row of a benchmark; with a single repetition (the smoke run), its only run."""
    if name in medians:
        return medians[name]
    return runs[name][len(runs[name]) // 2] if runs.get(name) else None


def bench_ms(name, model=None):
    row = row_of(f"{name}/{model}" if model else name)
    if row is None:
        return None
    scale = {"ms": 1, "us": 1e-3, "ns": 1e-6}[row["time_unit"]]
    return row["real_time"] * scale


def counter(name, model, key):
    row = row_of(f"{name}/{model}")
    return None if row is None or key not in row else row[key]


def significant(v, digits):
    """`v` with at least `digits` significant digits, never in exponent notation."""
    if v == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    return f"{v:.{decimals}f}"


def fmt_ms(v, missing="cannot open"):
    if v is None:
        return missing
    return f"{v:.0f}" if v >= 10 else significant(v, 3)


def fmt_mib(nbytes):
    return "-" if nbytes is None else significant(nbytes / 2**20, 3)


def speed_up(a, b):
    """How many times faster `a` is than `b` (below 1: slower)."""
    if a is None or b is None or a == 0:
        return "-"
    r = b / a
    return f"{r:.0f}x" if r >= 10 else f"{r:.2f}x"


def over_limit(t, limit):
    """`t` as a multiple of the physical limit for the same work."""
    if t is None or limit is None or limit == 0:
        return "-"
    r = t / limit
    return f"{r:.0f}x" if r >= 10 else f"{r:.2f}x"


def limit_ms(nbytes, bytes_per_second):
    if nbytes is None or not bytes_per_second:
        return None
    return nbytes / bytes_per_second * 1000


def bandwidth(name):
    row = row_of(name)
    return None if row is None else row.get("bytes_per_second")


size = {m: os.path.getsize(os.path.join(folder, m + ".onnx")) for m in models}
memcpy_bps = bandwidth("limit_memcpy_bandwidth")
read_bps = bandwidth("limit_read_bandwidth")
print(f"Machine: {platform.machine()}, {sys.argv[2]} cores, {platform.system()} "
      f"{platform.release()}. Medians of 5 runs (bench; 3 for cold fetches) and of fresh "
      f"processes (5 for onnxmap and libprotobuf, 3 for python, 1 for python's materialise). "
      f"Physical limits from the same run: memcpy "
      f"{(memcpy_bps or 0) / 2**30:.1f} GiB/s, read {(read_bps or 0) / 2**30:.1f} GiB/s "
      f"(1 GiB buffers already faulted in).\n")

print("Open: the floor is the metadata bytes (file minus tensor bytes stored in it) copied at "
      "memcpy speed. Mapping is the kernel's part: mapping the file and faulting in every page "
      "that holds metadata, which no open of a mapped file can skip.\n")
print("| model | file | metadata MiB | onnxmap open ms | floor ms | open / floor | mapping ms | "
      "libprotobuf parse ms | python onnx.load ms | open speed-up vs libprotobuf | "
      "vs python |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for m in models:
    open_ms = bench_ms("onnxmap_open", m)
    file_bytes = counter("onnxmap_open", m, "file_bytes")
    payload = counter("onnxmap_open", m, "inline_payload_bytes")
    metadata = None if file_bytes is None or payload is None else file_bytes - payload
    floor = limit_ms(metadata, memcpy_bps)
    pb = bench_ms("protobuf_parse", m)
    py = probe(m, "python-onnx-load")
    py_ms = py[0] if py else None
    print(f"| {m} | {size[m] / 2**30:.2f} GiB | {fmt_mib(metadata)} | {fmt_ms(open_ms)} | "
          f"{fmt_ms(floor, '-')} | {over_limit(open_ms, floor)} | "
          f"{fmt_ms(bench_ms('limit_map_metadata', m))} | {fmt_ms(pb)} | "
          f"{fmt_ms(py_ms)} | {speed_up(open_ms, pb)} | {speed_up(open_ms, py_ms)} |")

print("\nThe first open in a fresh process, as a serving process opens its model once (page cache "
      "warm): each side's memory comes fresh from the kernel, where in the loops above "
      "libprotobuf's parse reuses the heap the previous iteration's message freed. Each figure "
      "ends when the model is usable; freeing it is in none.\n")
print("| model | onnxmap open ms | libprotobuf parse ms | python onnx.load ms | "
      "speed-up vs libprotobuf | vs python |")
print("|---|---|---|---|---|---|")
for m in models:
    first = [probe(m, mode) for mode in ("onnxmap-open", "protobuf-parse", "python-onnx-load")]
    o_ms, pb_ms, py_ms = (p[0] if p else None for p in first)
    print(f"| {m} | {fmt_ms(o_ms)} | {fmt_ms(pb_ms)} | {fmt_ms(py_ms)} | "
          f"{speed_up(o_ms, pb_ms)} | {speed_up(o_ms, py_ms)} |")

print("\nWhere an open's time goes: the CPU time per open (means) and the kernel's part of it "
      "(page faults: the tables' fresh memory zeroed, the file's pages mapped):\n")
print("| model | wall ms | CPU ms | kernel ms |")
print("|---|---|---|---|")
for m in models:
    wall = bench_ms("onnxmap_open", m)
    cpu, kernel = (counter("onnxmap_open", m, k) for k in ("cpu_ms", "kernel_ms"))
    print(f"| {m} | {fmt_ms(wall)} | {fmt_ms(cpu)} | {fmt_ms(kernel)} |")

print("\nThe rest of the reader, and peak RSS of one open in a fresh process:\n")
print("| model | close ms | peek ms | lookup ns | walk nodes ms | walk ns per node | "
      "onnxmap open RSS MiB | "
      "onnxmap index MiB | libprotobuf RSS MiB | python RSS MiB |")
print("|---|---|---|---|---|---|---|---|---|---|")
for m in models:
    lookup = bench_ms("onnxmap_lookup", m)
    walk = bench_ms("onnxmap_walk_nodes", m)
    nodes = counter("onnxmap_walk_nodes", m, "nodes")
    per_node = "-" if walk is None or not nodes else f"{walk * 1e6 / nodes:.0f}"
    o_rss = probe(m, "onnxmap-open")
    pb_rss = probe(m, "protobuf-parse")
    py = probe(m, "python-onnx-load")
    print(f"| {m} | {fmt_ms(bench_ms('onnxmap_close', m), '-')} | "
          f"{fmt_ms(bench_ms('onnxmap_peek', m), '-')} | "
          f"{'-' if lookup is None else f'{lookup * 1e6:.0f}'} | "
          f"{fmt_ms(walk, '-')} | {per_node} | "
          f"{'-' if o_rss is None else f'{o_rss[1]:.1f}'} | "
          f"{'-' if o_rss is None else f'{o_rss[2]:.1f}'} | "
          f"{'-' if pb_rss is None else f'{pb_rss[1]:.0f}'} | "
          f"{'-' if py is None else f'{py[1]:.0f}'} |")

print("\nFetch of one tensor, every byte read and summed. Limit: the same read of a buffer "
      "already in memory. Warm: pages mapped already. First touch: in the page cache, not "
      "mapped (Tensor::release() before each read). **Cold**: evicted from the page cache "
      "before each read (posix_fadvise DONTNEED), read through the random-access map, or after "
      "Tensor::prefetch(); llm-7b-ext's data file is sparse, so its cold reads zero-fill holes "
      "instead of reading the disk. \"resident\" is the share of the tensor's pages still in "
      "memory when the cold read began.\n")
print("| model | tensor | MiB | limit ms | warm ms | warm / limit | first touch ms | "
      "first touch / limit | cold ms | cold / limit | cold + prefetch ms | "
      "cold + prefetch / limit | resident |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for m in models:
    row = row_of(f"onnxmap_fetch_first_touch/{m}")
    if row is None:
        continue
    limit = bench_ms("limit_resident_read_tensor", m)
    warm = bench_ms("onnxmap_fetch_warm", m)
    touch = bench_ms("onnxmap_fetch_first_touch", m)
    cold = bench_ms("onnxmap_fetch_cold", m)
    cold_prefetch = bench_ms("onnxmap_fetch_cold_prefetch", m)
    resident = counter("onnxmap_fetch_cold", m, "resident_before")
    print(f"| {m} | {row.get('label', '')} | {fmt_mib(row.get('bytes'))} | "
          f"{fmt_ms(limit, '-')} | {fmt_ms(warm, '-')} | {over_limit(warm, limit)} | "
          f"{fmt_ms(touch, '-')} | {over_limit(touch, limit)} | {fmt_ms(cold, 'not run')} | "
          f"{over_limit(cold, limit)} | {fmt_ms(cold_prefetch, 'not run')} | "
          f"{over_limit(cold_prefetch, limit)} | "
          f"{'-' if resident is None else f'{resident * 100:.0f}%'} |")

print("\nslice_rows of a tensor-parallel shard (rows 3/8 to 4/8 of the same tensor), first "
      "touch, every byte read; limit as above for the shard's bytes:\n")
print("| model | rows | MiB | limit ms | slice_rows + read ms | / limit | "
      "whole tensor first touch ms |")
print("|---|---|---|---|---|---|---|")
for m in models:
    name = "onnxmap_slice_rows_first_touch"
    if row_of(f"{name}/{m}") is None:
        continue
    begin, end, rows = (counter(name, m, k) for k in ("rows_begin", "rows_end", "rows"))
    limit = bench_ms("limit_resident_read_slice", m)
    sliced = bench_ms(name, m)
    print(f"| {m} | {begin:.0f}..{end:.0f} of {rows:.0f} | {fmt_mib(counter(name, m, 'bytes'))} "
          f"| {fmt_ms(limit, '-')} | {fmt_ms(sliced, '-')} | {over_limit(sliced, limit)} | "
          f"{fmt_ms(bench_ms('onnxmap_fetch_first_touch', m), '-')} |")

print("\nEvery tensor's bytes read once, from the path: open included, pages in the page "
      "cache but none mapped. At most the leading 2 GiB of tensors (bench/read_all_bench.cpp). "
      "sum: every byte summed where it is mapped. prefetch: the loader's pool reads the pages into "
      "the page cache, then one thread sums. copy: load_into a reused, pre-faulted 1 GiB staging "
      "buffer. Limit: the "
      "bytes at the read (sum) or memcpy (copy) bandwidth above. python: onnx.load, then for "
      "each of the same tensors its external data loaded and numpy_helper.to_array (one fresh "
      "process).\n")
print("| model | read | method | ms | limit ms | / limit | speed-up vs python |")
print("|---|---|---|---|---|---|---|")
for m in models:
    name = "onnxmap_read_all_copy_pool"
    if row_of(f"{name}/{m}") is None:
        if m in READ_ALL_SKIPPED:
            print(f"| {m} | - | {READ_ALL_SKIPPED[m]} | - | - | - | - |")
        continue
    nbytes = counter(name, m, "bytes_read")
    read = (f"{nbytes / 2**30:.2f} GiB, {counter(name, m, 'tensors_read'):.0f} of "
            f"{counter(name, m, 'tensors'):.0f} tensors")
    threads = counter(name, m, "threads")
    py = probe(m, "python-onnx-materialise")
    py_ms = py[0] if py else None
    methods = [
        ("sum, 1 thread", "onnxmap_read_all_sum_1thread", read_bps),
        (f"prefetch pool ({threads:.0f} threads) + sum", "onnxmap_read_all_prefetch_pool",
         read_bps),
        ("copy, 1 thread", "onnxmap_read_all_copy_1thread", memcpy_bps),
        (f"copy, pool ({threads:.0f} threads)", "onnxmap_read_all_copy_pool", memcpy_bps),
    ]
    for label, bench_name, bps in methods:
        t = bench_ms(bench_name, m)
        limit = limit_ms(nbytes, bps)
        print(f"| {m} | {read} | {label} | {fmt_ms(t, '-')} | {fmt_ms(limit, '-')} | "
              f"{over_limit(t, limit)} | {speed_up(t, py_ms)} |")
    py_bytes = probe_column(m, "python-onnx-materialise", 2)
    mismatch = "" if py_bytes in (None, nbytes) else f", **{py_bytes / 2**30:.2f} GiB**"
    print(f"| {m} | {read} | python onnx.load + to_array (peak RSS "
          f"{'-' if py is None else f'{py[1]:.0f}'} MiB{mismatch}) | {fmt_ms(py_ms)} | - | - | "
          f"1x |")
