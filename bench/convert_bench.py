#!/usr/bin/python3
"""Conversion speed and memory, against cp of the same file on the same machine.

    convert_bench.py [--vs BASE_ONNXMAP] [--runs N] ONNXMAP PEAK_RSS DIR MODEL [MODEL...]

For each MODEL (in DIR, made by tools/bench.sh): `cp` of the file, `onnxmap convert` inline ->
external data, inline -> safetensors data files (--data-format safetensors) and external back to
inline, each a fresh process, median of N runs (3 unless told) with a
warm page cache (each output removed, and everything written synced, before the next run). Peak
RSS is the kernel's accounting of the child (ru_maxrss, read by bench/peak_rss). Prints a markdown
table: time, throughput, ratio to cp, peak RSS.

With --vs, BASE_ONNXMAP (another build, say main's) runs each conversion too, in turn with
ONNXMAP and cp within each round (cp, base, new, cp, base, new, ...), so that drift of a shared
machine falls on all alike; its rows are marked "(base)", and a second table gives the median of
the round-by-round ratios base time / new time, of wall time and of CPU time (user + sys: the
copies are CPU-bound in the kernel, and CPU time is steadier than wall time on a busy machine),
and the ratios of cp's median CPU time to each build's.
"""
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys

PEAK_RSS = "peak_rss"


def run_measured(command):
    """Seconds, peak RSS (MiB) and CPU seconds (user + sys, from the kernel's accounting of the
    children) of one fresh process, through bench/peak_rss."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([PEAK_RSS, *map(str, command)], check=True, capture_output=True,
                         text=True).stdout.split()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return float(out[0]), float(out[1]), cpu


def medians_of(commands, cleanups, runs):
    """Runs the commands in turn, `runs` rounds; each command's (seconds, MiB) per round."""
    results = [[] for _ in commands]
    for _ in range(runs):
        for i, command in enumerate(commands):
            cleanups[i]()
            # Each run starts with nothing waiting for writeback: otherwise a run pays for the
            # dirty pages of the one before it, and the ratios to cp swing by 2x between runs.
            os.sync()
            results[i].append(run_measured(command))
    for cleanup in cleanups:
        cleanup()
    return results


def median(results, field=0):
    return statistics.median(r[field] for r in results)


def parse_args(argv):
    base, runs = None, 3
    while argv and argv[0].startswith("--"):
        if argv[0] == "--vs":
            base, argv = argv[1], argv[2:]
        elif argv[0] == "--runs":
            runs, argv = int(argv[1]), argv[2:]
        else:
            sys.exit(f"unknown option {argv[0]}")
    return base, runs, argv


def measure_model(onnxmaps, folder, name, runs):
    """(label, [(seconds, MiB) per round]) for cp and each conversion of each onnxmap."""
    model = folder / f"{name}.onnx"
    work, back_dir = folder / "convert-out", folder / "convert-back"

    def fresh(path):
        def clean():
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir()
        return clean

    # Warm the page cache once (the bench compares copies, not disk reads).
    subprocess.run(["cat", str(model)], check=True, stdout=subprocess.DEVNULL)
    labels = ["cp"] + [f"onnxmap convert -> external{tag}" for _, tag in onnxmaps] + [
        f"onnxmap convert -> safetensors{tag}" for _, tag in onnxmaps]
    commands = [["cp", model, work / "copy.onnx"]] + [
        [exe, "convert", model, work / "ext.onnx", "--external-data"] for exe, _ in onnxmaps] + [
        [exe, "convert", model, work / "st.onnx", "--data-format", "safetensors"]
        for exe, _ in onnxmaps]
    results = medians_of(commands, [fresh(work)] * len(commands), runs)
    fresh(work)()
    subprocess.run([onnxmaps[0][0], "convert", model, work / "ext.onnx", "--external-data"],
                   check=True, stdout=subprocess.DEVNULL)
    labels += [f"onnxmap convert -> inline{tag}" for _, tag in onnxmaps]
    results += medians_of(
        [[exe, "convert", work / "ext.onnx", back_dir / "back.onnx", "--inline"]
         for exe, _ in onnxmaps], [fresh(back_dir)] * len(onnxmaps), runs)
    shutil.rmtree(back_dir, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    return list(zip(labels, results))


def main():
    global PEAK_RSS
    base, runs, args = parse_args(sys.argv[1:])
    onnxmap, PEAK_RSS = args[0], args[1]
    folder, models = pathlib.Path(args[2]), args[3:]
    onnxmaps = [(onnxmap, "")] + ([(base, " (base)")] if base else [])
    rows, pairs = [], []
    for name in models:
        model = folder / f"{name}.onnx"
        size = model.stat().st_size
        on_disk = model.stat().st_blocks * 512
        measured = dict(measure_model(onnxmaps, folder, name, runs))
        cp = median(measured["cp"])
        gib = size / 2**30
        for what, results in measured.items():
            seconds, rss = median(results), median(results, 1)
            ratio = cp / seconds if seconds > 0 else float("inf")
            rows.append(f"| {name} | {gib:.2f} GiB ({on_disk / 2**30:.2f} on disk) | {what} | "
                        f"{seconds * 1000:.0f} | {size / 2**20 / seconds:.0f} | "
                        f"{ratio:.2f}x | {rss:.1f} |")
        cp_cpu = median(measured["cp"], 2)
        for layout in ("external", "inline") if base else ():
            new = measured[f"onnxmap convert -> {layout}"]
            old = measured[f"onnxmap convert -> {layout} (base)"]
            ratios = [o[0] / n[0] for o, n in zip(old, new)]
            cpu_ratios = [o[2] / n[2] for o, n in zip(old, new)]
            pairs.append(f"| {name} | -> {layout} | {statistics.median(ratios):.2f}x | "
                         f"{min(ratios):.2f}x | {max(ratios):.2f}x | "
                         f"{statistics.median(cpu_ratios):.2f}x | "
                         f"{cp_cpu / median(new, 2):.2f}x | {cp_cpu / median(old, 2):.2f}x |")
    print("| model | file | command | ms | MiB/s (apparent size) | throughput vs cp | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if pairs:
        print(f"\nRound by round, base time / new time ({runs} rounds):\n")
        print("| model | conversion | wall: median | min | max | CPU: median | cp/new | "
              "cp/base |")
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(pairs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
