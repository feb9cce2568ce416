#!/usr/bin/python3
"""Conversion speed and memory, against cp of the same file on the same machine.

    convert_bench.py ONNXMAP PEAK_RSS DIR MODEL [MODEL...]

For each MODEL (in DIR, made by tools/bench.sh): `cp` of the file, `onnxmap convert` inline ->
external data and back to inline, each a fresh process, median of 3 runs with a warm page cache
(each output removed, and everything written synced, before the next run). Peak RSS is the kernel's accounting of the child
(ru_maxrss, read by bench/peak_rss). Prints a markdown table: time, throughput, ratio to cp,
peak RSS.
"""
import os
import pathlib
import shutil
import statistics
import subprocess
import sys

PEAK_RSS = "peak_rss"


def run_measured(command):
    """Seconds and peak RSS (MiB) of one fresh process, through bench/peak_rss."""
    out = subprocess.run([PEAK_RSS, *map(str, command)], check=True, capture_output=True,
                         text=True).stdout.split()
    return float(out[0]), float(out[1])


def median_of(command, cleanup, runs=3):
    results = []
    for _ in range(runs):
        cleanup()
        # Each run starts with nothing waiting for writeback: otherwise a run pays for the dirty
        # pages of the one before it, and the ratios to cp swing by 2x between runs.
        os.sync()
        results.append(run_measured(command))
    cleanup()
    return statistics.median(r[0] for r in results), statistics.median(r[1] for r in results)


def main():
    global PEAK_RSS
    onnxmap, PEAK_RSS = sys.argv[1], sys.argv[2]
    folder, models = pathlib.Path(sys.argv[3]), sys.argv[4:]
    work = folder / "convert-out"
    rows = []

    def clean():
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()

    for name in models:
        model = folder / f"{name}.onnx"
        size = model.stat().st_size
        on_disk = model.stat().st_blocks * 512
        # Warm the page cache once (the bench compares copies, not disk reads).
        subprocess.run(["cat", str(model)], check=True, stdout=subprocess.DEVNULL)
        cp = median_of(["cp", model, work / "copy.onnx"], clean)
        ext = median_of([onnxmap, "convert", model, work / "ext.onnx", "--external-data"], clean)
        clean()
        subprocess.run([onnxmap, "convert", model, work / "ext.onnx", "--external-data"],
                       check=True, stdout=subprocess.DEVNULL)
        back_dir = folder / "convert-back"
        shutil.rmtree(back_dir, ignore_errors=True)
        back_dir.mkdir()

        def clean_back():
            shutil.rmtree(back_dir, ignore_errors=True)
            back_dir.mkdir()
        back = median_of([onnxmap, "convert", work / "ext.onnx", back_dir / "back.onnx",
                          "--inline"], clean_back)
        shutil.rmtree(back_dir, ignore_errors=True)
        clean()
        gib = size / 2**30
        for what, (seconds, rss) in (("cp", cp), ("onnxmap convert -> external", ext),
                                     ("onnxmap convert -> inline", back)):
            ratio = cp[0] / seconds if seconds > 0 else float("inf")
            rows.append(f"| {name} | {gib:.2f} GiB ({on_disk / 2**30:.2f} on disk) | {what} | "
                        f"{seconds * 1000:.0f} | {size / 2**20 / seconds:.0f} | "
                        f"{ratio:.2f}x | {rss:.1f} |")
    shutil.rmtree(work, ignore_errors=True)
    print("| model | file | command | ms | MiB/s (apparent size) | throughput vs cp | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
