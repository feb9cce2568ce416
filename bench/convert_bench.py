#!/usr/bin/python3
"""Conversion speed and memory, against cp of the same file on the same machine.

    convert_bench.py [--vs BASE_ONNXMAP] [--runs N] [--weights-from-only MODEL]... ONNXMAP
                     PEAK_RSS DIR MODEL [MODEL...]

For each MODEL (in DIR, made by tools/bench.sh): `cp` of the file, `onnxmap convert` inline ->
external data, inline -> safetensors data files (--data-format safetensors), external back to
inline, and `convert --weights-from` into a checkpoint of the model's weights beside the output
(found by name: the graph alone is written; where the bytes are real, also by content, against cat
of the model and the checkpoint; a sparse model's checkpoint is a header over holes), each a fresh
process (a model of --weights-from-only: that alone), median of N runs (3 unless told) with a
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
import json
import os
import pathlib
import resource
import shutil
import statistics
import struct
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
    base, runs, sharing_only = None, 3, []
    while argv and argv[0].startswith("--"):
        if argv[0] == "--vs":
            base, argv = argv[1], argv[2:]
        elif argv[0] == "--runs":
            runs, argv = int(argv[1]), argv[2:]
        elif argv[0] == "--weights-from-only":
            sharing_only, argv = sharing_only + [argv[1]], argv[2:]
        else:
            sys.exit(f"unknown option {argv[0]}")
    return base, runs, sharing_only, argv


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


SAFETENSORS_DTYPE = {"FLOAT": "F32", "FLOAT16": "F16", "BFLOAT16": "BF16"}


def sparse_checkpoint(exe, model, path):
    """A safetensors file of `model`'s external-bound tensors whose data is holes, as the sparse
    model's payloads are: the header only, then the file truncated to its size (no byte of
    data written)."""
    rows = json.loads(subprocess.run([exe, "ls", model, "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    header, at = {}, 0
    for row in rows:
        if row["bytes"] >= 1024:
            header[row["name"]] = {"dtype": SAFETENSORS_DTYPE[row["dtype"]], "shape": row["dims"],
                                   "data_offsets": [at, at + row["bytes"]]}
            at += row["bytes"]
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.truncate(8 + len(text) + at)


def renamed_checkpoint(source, path):
    """A copy of the safetensors file `source` whose tensor names no initializer has ("model."
    becomes "Model.", the header keeping its length), so that every tensor is found by content."""
    shutil.copyfile(source, path)
    with open(path, "r+b") as f:
        length = struct.unpack("<Q", f.read(8))[0]
        text = f.read(length).replace(b'"model.', b'"Model.').replace(b'"lm_head', b'"Lm_head')
        f.seek(8)
        f.write(text)


def measure_weights_from(exe, folder, name, runs):
    """(label, results) of convert --weights-from into a checkpoint beside the output: found by
    name (the graph alone is written), and, where the model's bytes are real, by content (every
    byte of the model and of the checkpoint read once), beside cat of the two files."""
    model = folder / f"{name}.onnx"
    work = folder / "weights-from"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    checkpoint = work / "model.safetensors"
    sparse = model.stat().st_blocks * 512 < model.stat().st_size // 2
    if sparse:
        sparse_checkpoint(exe, model, checkpoint)
    else:
        subprocess.run([exe, "convert", model, checkpoint], check=True, capture_output=True)
    graph = work / "graph.onnx"
    clean = [lambda: graph.unlink(missing_ok=True)]
    labels = ["onnxmap convert --weights-from (by name)"]
    commands = [[exe, "convert", model, graph, "--weights-from", checkpoint]]
    if not sparse:
        renamed = work / "renamed" / "model.safetensors"
        renamed.parent.mkdir()
        renamed_checkpoint(checkpoint, renamed)
        by_content = renamed.parent / "graph.onnx"
        clean += [lambda: by_content.unlink(missing_ok=True), lambda: None]
        labels += ["onnxmap convert --weights-from (by content)", "cat of the model and checkpoint"]
        commands += [[exe, "convert", model, by_content, "--weights-from", renamed],
                     ["sh", "-c", f"cat '{model}' '{renamed}' > /dev/null"]]
    results = medians_of(commands, clean, runs)
    subprocess.run([exe, "convert", model, graph, "--weights-from", checkpoint], check=True,
                   capture_output=True)
    written = graph.stat().st_size
    shutil.rmtree(work, ignore_errors=True)
    return list(zip(labels, results)), written


def main():
    global PEAK_RSS
    base, runs, sharing_only, args = parse_args(sys.argv[1:])
    onnxmap, PEAK_RSS = args[0], args[1]
    folder, models = pathlib.Path(args[2]), args[3:]
    onnxmaps = [(onnxmap, "")] + ([(base, " (base)")] if base else [])
    rows, pairs, sharing = [], [], []
    for name in sharing_only:
        size = (folder / f"{name}.onnx").stat().st_size
        shared, graph_bytes = measure_weights_from(onnxmap, folder, name, runs)
        sharing.append(f"| {name} | {size / 2**30:.2f} GiB | {graph_bytes / 2**10:.1f} KiB | "
                       f"{median(shared[0][1]) * 1000:.0f} |")
    for name in models:
        model = folder / f"{name}.onnx"
        size = model.stat().st_size
        on_disk = model.stat().st_blocks * 512
        measured = dict(measure_model(onnxmaps, folder, name, runs))
        shared, graph_bytes = measure_weights_from(onnxmap, folder, name, runs)
        measured.update(shared)
        sharing.append(f"| {name} | {size / 2**30:.2f} GiB | {graph_bytes / 2**10:.1f} KiB | "
                       f"{median(shared[0][1]) * 1000:.0f} |")
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
    print("\n`convert --weights-from` found by name writes the graph alone:\n")
    print("| model | weights | graph written | ms |")
    print("|---|---|---|---|")
    print("\n".join(sharing))
    if pairs:
        print(f"\nRound by round, base time / new time ({runs} rounds):\n")
        print("| model | conversion | wall: median | min | max | CPU: median | cp/new | "
              "cp/base |")
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(pairs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
