"""Loading every tensor of the exporters' corpus' Llama past 2 GB (torch's dynamo exporter,
external data: tests/exporters/make_corpus.py, torch-llama-2gb) against safetensors' load_file of
the same weights written as a safetensors file, in the same run: issue 63's target is onnxmap's
load at least 0.9x safetensors' speed.

Each figure is a fresh process, the contenders alternated round after round (a drift of the
shared machine reaches them alike), warm (the files in the page cache) and cold (evicted with
posix_fadvise before each run, this files only), medians reported beside the minimum and maximum:
  - onnxmap (Python): `model.load(d.__setitem__)` after `onnxmap.open`: every tensor an array;
  - safetensors: `safetensors.numpy.load_file(path)`: every tensor an array;
  - onnxmap load (the command, read mode): every tensor's bytes into the loader's buffers;
  - the file's sequential read (16 MiB reads into one buffer): the limit of the disk or cache.
Run in the PyPI venv (safetensors, NumPy 2), the package importable from SITE (a wheel's
install: python/tests/wheel_suite.py makes one):

    bench/exporters_load.py ONNXMAP SITE CORPUS_FOLDER RUNS > bench/exporters-load.md
"""
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

ONNXMAP, SITE, CORPUS, RUNS = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3]), int(sys.argv[4])
MODEL = CORPUS / "torch-llama-2gb" / "model.onnx"
WEIGHTS = CORPUS.parent / (CORPUS.name + "-bench") / "torch-llama-2gb.safetensors"
CHUNK = 16 << 20

ONNXMAP_LOAD = """
import sys, time, onnxmap
t = time.perf_counter()
d = {}
with onnxmap.open(sys.argv[1]) as m:
    m.load(d.__setitem__)
    n = sum(a.nbytes for a in d.values())
print(time.perf_counter() - t, n)
"""
SAFETENSORS_LOAD = """
import sys, time
from safetensors.numpy import load_file
t = time.perf_counter()
d = load_file(sys.argv[1])
print(time.perf_counter() - t, sum(a.nbytes for a in d.values()))
"""


def write_safetensors():
    """The model's weights, read by onnxmap, as one safetensors file (made once)."""
    if WEIGHTS.is_file():
        return
    WEIGHTS.parent.mkdir(parents=True, exist_ok=True)
    code = ("import sys, onnxmap\nfrom safetensors.numpy import save_file\n"
            "d = {}\nwith onnxmap.open(sys.argv[1]) as m:\n    m.load(d.__setitem__)\n"
            "    save_file(d, sys.argv[2] + '.partial')\n")
    python(code, MODEL, WEIGHTS)
    os.rename(str(WEIGHTS) + ".partial", WEIGHTS)


def python(code, *args):
    env = {**os.environ, "PYTHONPATH": SITE}
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return (float(out[0]), int(out[1])) if out else None


def evict(*paths):
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


def sequential(*paths):
    buffer = bytearray(CHUNK)
    t, n = time.perf_counter(), 0
    for path in paths:
        with open(path, "rb", buffering=0) as f:
            while (got := f.readinto(buffer)) > 0:
                n += got
    return time.perf_counter() - t, n


def cli_load(path):
    answer = json.loads(subprocess.run([ONNXMAP, "load", str(path), "--json"], check=True,
                                       capture_output=True, text=True).stdout)
    return answer["seconds"], answer["bytes"]


def contenders():
    data = MODEL.parent / "model.onnx.data"
    onnx_files = [MODEL, data]
    return {
        "onnxmap (Python), model.load": (lambda: python(ONNXMAP_LOAD, MODEL), onnx_files),
        "safetensors.numpy.load_file": (lambda: python(SAFETENSORS_LOAD, WEIGHTS), [WEIGHTS]),
        "onnxmap load (command, read)": (lambda: cli_load(MODEL), onnx_files),
        "sequential read of the files": (lambda: sequential(*onnx_files), onnx_files),
    }


def measure(cold):
    runs = {name: [] for name in contenders()}
    for _ in range(RUNS):
        for name, (run, files) in contenders().items():
            if cold:
                evict(*files)
            else:
                run()  # warms the cache the first time; the figure is the next run's
            seconds, size = run()
            runs[name].append(size / seconds / 1e9)
    return runs


def table(title, runs):
    rows = [f"### {title}", "", "| | GB/s median | min | max | ratio to safetensors |",
            "|---|---|---|---|---|"]
    base = statistics.median(runs["safetensors.numpy.load_file"])
    for name, figures in runs.items():
        m = statistics.median(figures)
        rows.append(f"| {name} | {m:.2f} | {min(figures):.2f} | {max(figures):.2f} | "
                    f"{m / base:.2f}x |")
    return rows


def main():
    write_safetensors()
    size = sum(p.stat().st_size for p in MODEL.parent.iterdir() if p.name.startswith("model"))
    warm, cold = measure(False), measure(True)
    ratio_warm = statistics.median(warm["onnxmap (Python), model.load"]) / \
        statistics.median(warm["safetensors.numpy.load_file"])
    ratio_cold = statistics.median(cold["onnxmap (Python), model.load"]) / \
        statistics.median(cold["safetensors.numpy.load_file"])
    verdict = lambda r: "met" if r >= 0.9 else "**missed**"  # noqa: E731
    lines = ["# Loading an export past 2 GB against safetensors", "",
             "Written by `bench/exporters_load.py` (its docstring says how it measures); "
             f"{RUNS} rounds, fresh processes, alternated; this machine, shared with other work: "
             f"{os.cpu_count()} cores, Python {platform.python_version()}.", "",
             f"The model: torch-llama-2gb of the exporters' corpus, {size / 1e9:.2f} GB "
             "(model.onnx and model.onnx.data, torch 2.15's dynamo exporter); the same weights "
             "as one safetensors file.", "",
             f"Target: onnxmap's load at least 0.9x of safetensors' load_file. Warm: "
             f"{ratio_warm:.2f}x ({verdict(ratio_warm)}); cold: {ratio_cold:.2f}x "
             f"({verdict(ratio_cold)}).", ""]
    lines += table("Warm (files in the page cache)", warm) + [""]
    lines += table("Cold (files evicted before each run)", cold) + [""]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
