#!/usr/bin/python3
"""`onnxmap stats` and `onnxmap diff` of every tensor of a model, warm and cold, against the
limits measured in the same run: one core's memory-read bandwidth (numpy summing an array in
memory) warm, and the file's sequential read through the page cache (16 MiB reads, after
eviction) cold. diff compares the model with a byte-for-byte copy of it. Prints a markdown
table; tools/view_bench.sh puts it in bench/view.md.

    weights_bench.py ONNXMAP MODEL RUNS
"""
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


def main():
    copy = MODEL + ".copy"
    shutil.copyfile(MODEL, copy)
    size = os.path.getsize(MODEL)
    gb = size / 1e9
    stats = [ONNXMAP, "stats", MODEL, "--json"]
    diff = [ONNXMAP, "diff", MODEL, copy]
    rows = []
    try:
        memory = memory_read_gbs()
        warm(MODEL, copy)
        for name, command, volume in (("stats", stats, gb), ("diff", diff, 2 * gb)):
            t = statistics.median(seconds(command) for _ in range(RUNS))
            rows.append((f"`{name}`, warm", volume / t, memory, "one core's memory reads"))
        for name, command, paths in (("stats", stats, [MODEL]), ("diff", diff, [MODEL, copy])):
            got, limit = [], []
            for _ in range(RUNS):
                evict(*paths)
                limit.append(read_seconds(*paths))
                evict(*paths)
                got.append(seconds(command))
            volume = gb * len(paths)
            rows.append((f"`{name}`, cold", volume / statistics.median(got),
                         volume / statistics.median(limit), "16 MiB reads of the file(s), cold"))
    finally:
        os.remove(copy)
    print(f"{os.path.basename(MODEL)}, {gb:.2f} GB; medians of {RUNS} runs; diff reads the model "
          "and a copy of it.\n")
    print("| what | GB/s | limit GB/s | limit | ratio |\n|---|---:|---:|---|---:|")
    for what, speed, limit, name in rows:
        print(f"| {what} | {speed:.2f} | {limit:.2f} | {name} | {speed / limit:.2f}x |")


if __name__ == "__main__":
    main()
