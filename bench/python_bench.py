#!/usr/bin/python3
"""The Python package against python3-onnx, each measurement in a fresh process, warm page cache:

    python_bench.py ONNXMAP RSS_PROBE DIR [--runs N] [--models llm-2g,graph-heavy]

ONNXMAP is the onnxmap command (it makes the models with `onnxmap synth` when DIR lacks them, and
they are removed afterwards), RSS_PROBE is bench/rss_probe (the C++ open in a fresh process).
The package must be importable (PYTHONPATH=BUILD/python, or installed). Measured per model:
- onnxmap.open + every tensor as a NumPy array (zero copy), and the same with every page of every
  array touched (the bytes read from the page cache), against onnx.load + numpy_helper.to_array
  of every initializer: time and peak RSS above the process's RSS after its imports;
- onnxmap.open alone from Python against the C++ open (rss_probe onnxmap-open), both in fresh
  processes, both timed until the model is open (the close after it is not in the figure, as
  rss_probe and bench/reader_bench.cpp time an open), the two alternating so that load from
  other work on the machine falls on both alike: wall time, and CPU time (user + system, every
  thread; the C++ figure is the whole rss_probe process, start and exit included), which
  others' load disturbs less.
Prints a Markdown table of medians over N runs.
"""
import argparse
import os
import pathlib
import resource
import statistics
import subprocess
import sys

SYNTH = {
    "llm-2g": ["--layers", "16", "--hidden", "2048", "--ffn", "6656", "--vocab", "32000"],
    "graph-heavy": ["--layers", "20000", "--hidden", "4", "--vocab", "16"],
}

# One measurement in a fresh process; prints "ms extra_peak_rss_kib extra_anon_kib cpu_ms": the peak
# RSS counts the model's mapped pages (page cache, shared and reclaimable); RssAnon, read at the
# end, is the memory the process itself holds.
PROBE = r"""
import resource, sys, time

def anon_kib():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("RssAnon:"))

mode, path = sys.argv[1], sys.argv[2]
import numpy as np
if mode.startswith("onnxmap"):
    import onnxmap
else:
    import onnx
    from onnx import numpy_helper
def cpu_ms():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (usage.ru_utime + usage.ru_stime) * 1000

base, base_anon = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, anon_kib()
start, start_cpu = time.perf_counter(), cpu_ms()
if mode == "onnxmap-open":
    model = onnxmap.open(path)
elif mode.startswith("onnxmap"):
    model = onnxmap.open(path)
    arrays = [model[name].numpy() for name in model.keys()]
    if mode == "onnxmap-touch":
        for a in arrays:
            if a.dtype == object:
                continue
            flat = a.reshape(-1).view(np.uint8)
            int(flat[::4096].sum()) if flat.size else 0
else:
    model = onnx.load(path)
    arrays = [numpy_helper.to_array(t) for t in model.graph.initializer]
ms, cpu = (time.perf_counter() - start) * 1000, cpu_ms() - start_cpu
if mode == "onnxmap-open":
    model.close()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
print(f"{ms:.3f} {peak} {anon_kib() - base_anon} {cpu:.3f}")
"""


def probe(mode, path):
    run = subprocess.run([sys.executable, "-c", PROBE, mode, str(path)], capture_output=True,
                         text=True, check=True)
    ms, kib, anon, cpu = run.stdout.split()
    return float(ms), int(kib), int(anon), float(cpu)


def cpp_open(rss_probe, path):
    """Wall ms (rss_probe's own) and CPU ms of the whole process (its rusage as a child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run([rss_probe, "onnxmap-open", str(path)], capture_output=True, text=True,
                         check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return float(run.stdout.split()[0]), cpu


def open_ratio(rss_probe, path, runs):
    """Python open and C++ open, alternating: medians of (wall, CPU) for each."""
    py, cpp = [], []
    for _ in range(runs):
        py.append(probe("onnxmap-open", path)[::3])
        cpp.append(cpp_open(rss_probe, path))
    return ([statistics.median(r[i] for r in py) for i in (0, 1)],
            [statistics.median(r[i] for r in cpp) for i in (0, 1)])


def median_of(runs, measure):
    results = [measure() for _ in range(runs)]
    return tuple(statistics.median(r[i] for r in results) for i in range(3))


def bench_model(name, path, rss_probe, runs):
    rows = {}
    for mode in ("onnx", "onnxmap", "onnxmap-touch"):
        rows[mode] = median_of(runs if mode != "onnx" else max(1, runs // 2),
                               lambda: probe(mode, path))
    (py_open, py_cpu), (cpp, cpp_cpu) = open_ratio(rss_probe, path, runs)
    onnx_ms, onnx_kib, onnx_anon = rows["onnx"]
    print(f"| {name} | onnx.load + numpy_helper.to_array | {onnx_ms:.0f} | {onnx_kib / 1024:.1f} "
          f"| {onnx_anon / 1024:.1f} | 1x | 1x |")
    for mode, label in (("onnxmap", "onnxmap.open + every tensor .numpy() (zero copy)"),
                        ("onnxmap-touch", "... and every page of every array read")):
        ms, kib, anon = rows[mode]
        memory = f"1/{onnx_kib / max(kib, 1):.0f} (private: 1/{onnx_anon / max(anon, 1):.0f})"
        print(f"| {name} | {label} | {ms:.1f} | {kib / 1024:.1f} | {anon / 1024:.1f} | "
              f"{onnx_ms / ms:.0f}x | {memory} |")
    print(f"| {name} | open alone: Python {py_open:.2f} ms, C++ {cpp:.2f} ms (CPU: "
          f"{py_cpu:.1f} ms, {cpp_cpu:.1f} ms) | Python / C++ = {py_open / cpp:.2f} "
          f"(CPU {py_cpu / cpp_cpu:.2f}) | | | | |")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("onnxmap")
    parser.add_argument("rss_probe")
    parser.add_argument("dir", type=pathlib.Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--models", default="llm-2g,graph-heavy")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"Medians of {args.runs} fresh processes (onnx: {max(1, args.runs // 2)}); memory above "
          "the process's after its imports: peak RSS (mapped file pages included) and private "
          "memory (RssAnon) at the end.\n")
    print("| model | what | ms | extra peak RSS MiB | extra private MiB | speed-up vs onnx | "
          "memory vs onnx |")
    print("|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        path = args.dir / f"{name}.onnx"
        made = not path.exists()
        if made:
            subprocess.run([args.onnxmap, "synth", str(path), *SYNTH[name]], check=True,
                           stdout=subprocess.DEVNULL)
        try:
            probe("onnxmap", path)  # warm the page cache
            bench_model(name, path, args.rss_probe, args.runs)
        finally:
            if made:
                os.unlink(path)


if __name__ == "__main__":
    main()
