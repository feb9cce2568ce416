#!/usr/bin/python3
"""onnxmap hash and verify against sha256sum of the same files, on the same machine, warm.

    verify_bench.py [--runs N] ONNXMAP DIR MODEL [MODEL...]

For each MODEL (DIR/MODEL.onnx, made by tools/bench.sh; llm-2g is one inline file) and its copy
split into data files of 256 MiB (convert --external-data --max-file-size 256M): `sha256sum` of
the model's files (coreutils: no SHA instructions), `openssl dgst -sha256` of them (one core with
them: the speed of one SHA-256 stream), `cat` of them (reading the page cache), `onnxmap hash` (SHA-256 of every file and every tensor), `hash --algorithm
xxh3-128` and `verify` against the SHA-256 manifest, each a fresh process, median of N runs (3
unless told), the files in the page cache (read once before). Prints a markdown table: time,
throughput over the files' bytes, and sha256sum's time over each row's. Then `load` of the inline
model without and with `--verify` (XXH3-128, SHA-256), warm in the read mode and cold in the
direct mode (the model's pages evicted with posix_fadvise before each run), and the same to the
host "device" (the device pipeline into host memory: each piece hashed as it is read, a tensor's
pieces in order), warm in the map mode (registered) and cold in the direct mode: the load's
seconds, and the throughput against the load without verification.
"""
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time


def seconds(command):
    start = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def files_of(model):
    folder = model.parent
    return [model] + sorted(p for p in folder.iterdir()
                            if p.name.startswith(model.name + ".data"))


def evict(files):
    """Drops the files' pages from the page cache (theirs only, not the machine's)."""
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


def load_rows(onnxmap, name, model, work, runs):
    """`load` without and with --verify (XXH3-128, SHA-256), warm (read mode) and cold (direct
    mode, the files evicted before each run): the load's own seconds (--json)."""
    manifests = {}
    for algorithm in ("xxh3-128", "sha256"):
        manifests[algorithm] = work / f"{algorithm}.json"
        subprocess.run([onnxmap, "hash", model, "--algorithm", algorithm, "-o",
                        manifests[algorithm]], check=True)
    rows = []
    for cache, mode, device in (("warm", "read", []), ("cold", "direct", []),
                                ("warm", "map", ["--device", "host"]),
                                ("cold", "direct", ["--device", "host"])):
        variants = {"load": [], "load --verify (xxh3-128)": ["--verify", manifests["xxh3-128"]],
                    "load --verify (sha256)": ["--verify", manifests["sha256"]]}
        times = {label: [] for label in variants}
        for _ in range(runs):
            for label, extra in variants.items():
                if cache == "cold":
                    evict(files_of(model))
                done = subprocess.run([onnxmap, "load", model, "--mode", mode, "--json", *device,
                                       *extra], check=True, capture_output=True, text=True)
                times[label].append(json.loads(done.stdout)["seconds"])
        base = statistics.median(times["load"])
        size = sum(f.stat().st_size for f in files_of(model))
        for label, measured in times.items():
            t = statistics.median(measured)
            where = f"{cache}, mode {mode}" + (", --device host" if device else "")
            rows.append(f"| {name} | {where} | {label} | {t * 1000:.0f} | "
                        f"{size / 2**20 / t:.0f} | {base / t:.2f}x |")
    return rows


def main():
    args = sys.argv[1:]
    runs = 3
    if args[:1] == ["--runs"]:
        runs, args = int(args[1]), args[2:]
    onnxmap, folder, names = args[0], pathlib.Path(args[1]), args[2:]
    print("| model | files | command | ms | MiB/s | sha256sum time / this |")
    print("|---|---|---|---|---|---|")
    for name in names:
        split = folder / "verify-split"
        shutil.rmtree(split, ignore_errors=True)
        split.mkdir()
        subprocess.run([onnxmap, "convert", folder / f"{name}.onnx", split / f"{name}.onnx",
                        "--external-data", "--max-file-size", "256M"], check=True,
                       stdout=subprocess.DEVNULL)
        for model in (folder / f"{name}.onnx", split / f"{name}.onnx"):
            files = files_of(model)
            size = sum(f.stat().st_size for f in files)
            manifest = split / "manifest.json"
            subprocess.run([onnxmap, "hash", model, "-o", manifest], check=True)
            commands = {"sha256sum": ["sha256sum", *files],
                        "openssl dgst -sha256": ["openssl", "dgst", "-sha256", *files],
                        "cat > /dev/null": ["cat", *files],
                        "onnxmap hash": [onnxmap, "hash", model, "-o", split / "m2.json"],
                        "onnxmap hash --algorithm xxh3-128": [onnxmap, "hash", model,
                                                              "--algorithm", "xxh3-128", "-o",
                                                              split / "m3.json"],
                        "onnxmap verify": [onnxmap, "verify", model, manifest]}
            times = {label: [] for label in commands}
            for _ in range(runs):
                for label, command in commands.items():
                    times[label].append(seconds(command))
            base = statistics.median(times["sha256sum"])
            for label, measured in times.items():
                t = statistics.median(measured)
                print(f"| {name} | {len(files)} ({size / 2**30:.2f} GiB) | {label} | "
                      f"{t * 1000:.0f} | {size / 2**20 / t:.0f} | {base / t:.2f}x |")
        print("\n| model | cache | command | ms | MiB/s | throughput vs load |")
        print("|---|---|---|---|---|---|")
        print("\n".join(load_rows(onnxmap, name, folder / f"{name}.onnx", split, runs)))
        shutil.rmtree(split, ignore_errors=True)


if __name__ == "__main__":
    main()
