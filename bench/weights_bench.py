#!/usr/bin/python3
"""`onnxmap stats` and `onnxmap diff` of every tensor of a model, warm and cold, against the
limits measured in the same run. Warm: the loader's own warm read of the same file(s) (the
gb_per_s that `onnxmap load MODEL --json` reports; for diff, the loader reading the model and
then its copy), and one core's memory-read bandwidth (numpy summing an array in memory); the
commands and the loader take turns, round after round, so that a drift of the shared machine
reaches them alike. Cold: the file's sequential read through the page cache (16 MiB reads, after
eviction). diff compares the model with a byte-for-byte copy of it. stats and diff are timed as
whole processes (start, open, output and exit included). Prints a markdown table;
tools/view_bench.sh puts it in bench/view.md.

    weights_bench.py ONNXMAP MODEL RUNS
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

ONNXMAP, MODEL, RUNS = sys.argv[1], sys.argv[2], int(sys.argv[3])
CHUNK = 16 << 20


def evict(*paths):
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


def warm(*paths):
    for path in paths:
        with open(path, "rb") as f:
            while f.read(CHUNK):
                pass


def seconds(command):
    start = time.perf_counter()
    subprocess.run(command, check=False, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def read_seconds(*paths):
    buffer = bytearray(CHUNK)
    start = time.perf_counter()
    for path in paths:
        with open(path, "rb", buffering=0) as f:
            while f.readinto(buffer):
                pass
    return time.perf_counter() - start


def memory_read_gbs():
    array = np.ones(1 << 27, dtype=np.uint64)  # 1 GiB, resident
    array.sum()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        array.sum()
        times.append(time.perf_counter() - start)
    return array.nbytes / statistics.median(times) / 1e9


def loader_seconds(path):
    """The seconds `onnxmap load PATH --json` reports (open and read, in the process)."""
    out = subprocess.run([ONNXMAP, "load", path, "--json"], check=True, capture_output=True)
    return json.loads(out.stdout)["seconds"]


def warm_rows(model, copy, gb, memory):
    """The warm rows: stats and diff against the loader's warm reads and the memory's."""
    stats = [ONNXMAP, "stats", model, "--json"]
    diff = [ONNXMAP, "diff", model, copy]
    warm(model, copy)
    times = {"stats": [], "diff": [], "load": [], "load both": []}
    for _ in range(RUNS):
        load_model = loader_seconds(model)
        times["load"].append(load_model)
        times["load both"].append(load_model + loader_seconds(copy))
        times["stats"].append(seconds(stats))
        times["diff"].append(seconds(diff))
    speed = {k: (2 * gb if k in ("diff", "load both") else gb) / statistics.median(v)
             for k, v in times.items()}
    return [("`stats`, warm", speed["stats"], speed["load"],
             "the loader's warm read (`onnxmap load --json`)"),
            ("`stats`, warm", speed["stats"], memory, "one core's memory reads"),
            ("`diff`, warm", speed["diff"], speed["load both"],
             "the loader's warm reads of both"),
            ("`diff`, warm", speed["diff"], memory, "one core's memory reads")]


def cold_rows(model, copy, gb):
    rows = []
    stats = [ONNXMAP, "stats", model, "--json"]
    diff = [ONNXMAP, "diff", model, copy]
    for name, command, paths in (("stats", stats, [model]), ("diff", diff, [model, copy])):
        got, limit = [], []
        for _ in range(RUNS):
            evict(*paths)
            limit.append(read_seconds(*paths))
            evict(*paths)
            got.append(seconds(command))
        volume = gb * len(paths)
        rows.append((f"`{name}`, cold", volume / statistics.median(got),
                     volume / statistics.median(limit), "16 MiB reads of the file(s), cold"))
    return rows


def main():
    copy = MODEL + ".copy"
    shutil.copyfile(MODEL, copy)
    size = os.path.getsize(MODEL)
    gb = size / 1e9
    try:
        memory = memory_read_gbs()
        rows = warm_rows(MODEL, copy, gb, memory) + cold_rows(MODEL, copy, gb)
    finally:
        os.remove(copy)
    print(f"{os.path.basename(MODEL)}, {gb:.2f} GB; medians of {RUNS} runs; diff reads the model "
          "and a copy of it.\n")
    print("| what | GB/s | limit GB/s | limit | ratio |\n|---|---:|---:|---|---:|")
    for what, speed, limit, name in rows:
        print(f"| {what} | {speed:.2f} | {limit:.2f} | {name} | {speed / limit:.2f}x |")


if __name__ == "__main__":
    main()
