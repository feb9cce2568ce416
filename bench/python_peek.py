#!/usr/bin/python3
"""A quick look at a model from Python (open, the node list, one tensor's bytes) with onnxmap,
onnx and onnx-ir, against issue 63's targets, on two models made once and kept in a cache:

    PYTHONPATH=SITE VENV/bin/python bench/python_peek.py BUILD [--runs N] [--cache DIR] [--out MD]

VENV is the PyPI venv (tools/venv.sh pypi: onnx, onnx-ir, torch, transformers), SITE a folder
the package imports from under it (the wheel's, as python/tests/wheel_suite.py installs it),
BUILD a build folder with the onnxmap command, bench/rss_probe (the C++ open) and
bench/peak_rss. The models, in DIR (default ~/.cache/onnxmap/bench/python-peek):
- decoder: a Llama (transformers, random weights, use_cache=False) exported by torch's dynamo
  exporter with external data, its weights over 2 GB and its files under 4 GB;
- chain: 180,000 Add nodes, each with its own initializer of 48 floats (onnx.helper), inline.
Every figure is a median over N rounds; each round runs every measurement once, each in a fresh
process, in turn (each round starting one later), so that others' load falls on all alike.
Python times the work alone, after its imports and a pause (PROBE); memory is the kernel's
high-water mark of resident pages, reset after the imports (/proc/self/clear_refs), above the
resident pages then ("extra peak": mapped file pages included), and the private memory
(RssAnon) added. The C++ figures are rss_probe's
open (in its process) and whole processes under peak_rss. Writes MD (bench/exporters.md)."""
import argparse
import hashlib
import json
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import time

from python_peek_report import write_report

HERE = pathlib.Path(__file__).resolve().parent
CACHE = pathlib.Path.home() / ".cache" / "onnxmap" / "bench" / "python-peek"
DECODER = dict(vocab_size=32000, hidden_size=1536, intermediate_size=4096,
               num_hidden_layers=20, num_attention_heads=12, num_key_value_heads=4,
               max_position_embeddings=256, use_cache=False, tie_word_embeddings=False)
CHAIN_NODES, CHAIN_SHAPE = 180_000, (8, 6)
PAUSE = 0.3  # seconds between a probe's imports and its work (PROBE)
# The tensor each model's "one tensor" is: a small one, so the figure is the access, not a copy.
TENSOR = {"decoder": "model.norm.weight", "chain": f"w{CHAIN_NODES // 2}"}

# One measurement in a fresh process: argv WHAT PATH TENSOR PAUSE; prints a JSON object of ms
# (the work), steps (ms at each step), import_ms, peak_kib and anon_kib (above the resident set
# after the imports). Each library is imported as a user of it would, with NumPy where arrays are
# made (onnx and onnx-ir import it themselves; onnxmap.open alone needs none). NumPy's OpenBLAS
# starts threads that spin for about 0.1 s after its import, taking a core from whatever runs
# then; the probe pauses PAUSE seconds after its imports so that every library starts alike.
PROBE = r"""
import json, os, sys, time
begun = time.perf_counter()
what, path, name, pause = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
if what.startswith("onnxmap"):
    import onnxmap
    if what == "onnxmap":
        import numpy
elif what == "onnx":
    import onnx
    from onnx import external_data_helper, numpy_helper
else:
    import onnx_ir
import_ms = (time.perf_counter() - begun) * 1000
time.sleep(pause)

def kib(key):
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith(key + ":"))

with open("/proc/self/clear_refs", "w") as refs:
    refs.write("5")  # VmHWM restarts from the resident set now
rss, anon = kib("VmRSS"), kib("RssAnon")
steps, start = {}, time.perf_counter()
def step(label):
    steps[label] = (time.perf_counter() - start) * 1000

if what.startswith("onnxmap"):
    model = onnxmap.open(path)
    step("open")
    if what == "onnxmap":
        nodes = model.graph.nodes
        count, last = len(nodes), nodes[-1].op_type
        step("nodes")
        total = float(model[name].numpy().sum())
elif what == "onnx":
    model = onnx.load(path, load_external_data=False)
    step("open")
    nodes = model.graph.node
    count, last = len(nodes), nodes[-1].op_type
    step("nodes")
    tensor = next(t for t in model.graph.initializer if t.name == name)
    if external_data_helper.uses_external_data(tensor):
        external_data_helper.load_external_data_for_tensor(tensor, os.path.dirname(path))
    total = float(numpy_helper.to_array(tensor).sum())
else:
    model = onnx_ir.load(path)
    step("open")
    count, last = len(model.graph), model.graph[-1].op_type
    step("nodes")
    total = float(model.graph.initializers[name].const_value.numpy().sum())
step("tensor")
ms = (time.perf_counter() - start) * 1000
print(json.dumps({"ms": ms, "steps": steps, "import_ms": import_ms,
                  "peak_kib": kib("VmHWM") - rss, "anon_kib": kib("RssAnon") - anon}))
"""


def make_decoder(folder):
    """DECODER's Llama through torch.onnx.export(dynamo=True, external_data=True)."""
    import torch
    import transformers
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**DECODER)).eval()
    tokens = torch.randint(0, DECODER["vocab_size"], (1, 16))
    with torch.no_grad():
        torch.onnx.export(model, (tokens,), str(folder / "model.onnx"), dynamo=True,
                          external_data=True)


def make_chain(folder):
    """CHAIN_NODES Add nodes in a chain, node i adding its own initializer w{i}."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("Add", [f"v{i}", f"w{i}"], [f"v{i + 1}"], name=f"add{i}")
             for i in range(CHAIN_NODES)]
    weights = [numpy_helper.from_array(np.full(CHAIN_SHAPE, i % 1000, np.float32), f"w{i}")
               for i in range(CHAIN_NODES)]
    value = [helper.make_tensor_value_info(f"v{i}", TensorProto.FLOAT, CHAIN_SHAPE)
             for i in (0, CHAIN_NODES)]
    graph = helper.make_graph(nodes, "chain", value[:1], value[1:], initializer=weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              str(folder / "model.onnx"))


MAKERS = {"decoder": make_decoder, "chain": make_chain}


def cache_key(name):
    """What a model depends on: its recipe, this file's maker and the exporting packages."""
    import importlib.metadata as meta
    packages = ("torch", "transformers") if name == "decoder" else ("onnx", "numpy")
    recipe = [DECODER if name == "decoder" else [CHAIN_NODES, CHAIN_SHAPE]]
    recipe += [meta.version(p) for p in packages]
    return hashlib.sha256(json.dumps(recipe).encode()).hexdigest()[:12]


def model_path(name, cache):
    """The model's file, made in a child process (its memory goes with it) when not cached."""
    folder = cache / f"{name}-{cache_key(name)}"
    if not (folder / "model.onnx").exists():
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        print(f"making {folder} ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, __file__, "--make", name, str(partial)], check=True)
        partial.rename(folder)
    return folder / "model.onnx"


def probe(what, path, tensor):
    out = subprocess.run([sys.executable, "-c", PROBE, what, str(path), tensor, str(PAUSE)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def cpp_open(build, path):
    """rss_probe's open time (ms, in its process) and the index's heap KiB."""
    out = subprocess.run([build / "bench" / "rss_probe", "onnxmap-open", str(path)], check=True,
                         capture_output=True, text=True).stdout.split()
    return {"ms": float(out[0]), "index_kib": float(out[2])}


def process(build, command):
    """A whole process under peak_rss: wall ms (start and exit included) and peak RSS KiB."""
    out = subprocess.run([build / "bench" / "peak_rss", *map(str, command)], check=True,
                         capture_output=True, text=True).stdout
    seconds, mib = out.split()
    return {"ms": float(seconds) * 1000, "peak_kib": float(mib) * 1024}


def measurements(build, path, tensor):
    """Label to a function of no arguments that measures once."""
    exe = build / "tools" / "onnxmap" / "onnxmap"
    python = [sys.executable, "-c", PROBE]
    return {
        "onnx": lambda: probe("onnx", path, tensor),
        "onnxmap": lambda: probe("onnxmap", path, tensor),
        "onnx_ir": lambda: probe("onnx_ir", path, tensor),
        "onnxmap-open": lambda: probe("onnxmap-open", path, tensor),
        "cpp-open": lambda: cpp_open(build, path),
        "cpp-open-process": lambda: process(build, [build / "bench" / "rss_probe",
                                                    "onnxmap-open", path]),
        "info-process": lambda: process(build, [exe, "info", path]),
        "python-process": lambda: process(build, python + ["onnxmap", path, tensor, 0]),
    }


def median_of(results):
    """Each figure's median over the rounds (steps included)."""
    out = {}
    for key in results[0]:
        if key == "steps":
            out[key] = {s: statistics.median(r[key][s] for r in results) for s in results[0][key]}
        else:
            out[key] = statistics.median(r[key] for r in results)
    return out


def bench_model(build, path, tensor, runs):
    measure = measurements(build, path, tensor)
    for run in measure.values():  # the page cache warm, the interpreter's files too
        run()
    results = {label: [] for label in measure}
    labels = list(measure)
    for round_ in range(runs):
        # Each round starts one measurement later, so that none always follows the same one
        # (onnx-ir's 0.7 GB process, say); neighbours stay neighbours, for paired ratios.
        start = round_ % len(labels)
        for label in labels[start:] + labels[:start]:
            results[label].append(measure[label]())
    return {label: median_of(r) for label, r in results.items()}, results


def model_facts(path):
    """Files, weight bytes, tensor and node counts, metadata bytes, as onnxmap reads them."""
    import onnxmap
    files = sorted(p for p in path.parent.iterdir() if p.is_file())
    with onnxmap.open(path) as model:
        tensors = [model.tensor_at(i) for i in range(model.tensor_count())]
        inline = sum(t.nbytes for t in tensors if t.storage != "external")
        return {"files": len(files), "file_bytes": sum(p.stat().st_size for p in files),
                "model_file_bytes": path.stat().st_size,
                "weight_bytes": sum(t.nbytes for t in tensors), "tensors": len(tensors),
                "external": sum(t.storage == "external" for t in tensors),
                "nodes": len(model.graph.nodes), "producer": model.producer_name,
                # The model file less the payloads it holds: what an index pass walks.
                "metadata_bytes": path.stat().st_size - inline}


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), platform.processor())
    mem = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal"))
    return (f"{cpu}, {os.cpu_count()} cores, {mem / 2**20:.0f} GiB; Linux {platform.release()}; "
            f"load average {os.getloadavg()[0]:.2f} at the start")


def shown(path):
    """`path` as the report prints it: relative to the repository where it lies inside it,
    else with ~ for the home folder, so that no machine's own paths go into bench/."""
    path = pathlib.Path(path).resolve()
    if path.is_relative_to(HERE.parent):
        return str(path.relative_to(HERE.parent))
    if path.is_relative_to(pathlib.Path.home()):
        return "~/" + str(path.relative_to(pathlib.Path.home()))
    return str(path)


def versions(build):
    import importlib.metadata as meta
    import onnxmap
    names = ["numpy", "onnx", "onnx_ir", "torch", "transformers"]
    found = ", ".join(f"{n} {meta.version(n.replace('_', '-'))}" for n in names)
    options = json.loads(subprocess.run(["meson", "introspect", "--buildoptions", str(build)],
                                        capture_output=True, text=True, check=True).stdout)
    buildtype = next(o["value"] for o in options if o["name"] == "buildtype")
    return (f"Python {platform.python_version()}, {found}; onnxmap {onnxmap.__version__} "
            f"(the package from {shown(pathlib.Path(onnxmap.__file__).parent)}, pybind11 "
            f"{onnxmap._onnxmap._pybind11_version}); C++ from {shown(build)} ({buildtype})")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--make":  # model_path's child
        MAKERS[sys.argv[2]](pathlib.Path(sys.argv[3]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("build", type=pathlib.Path)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--cache", type=pathlib.Path, default=CACHE)
    parser.add_argument("--models", default="decoder,chain")
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "exporters.md")
    args = parser.parse_args()
    build = args.build.resolve()
    header = {"machine": machine(), "versions": versions(build), "runs": args.runs,
              "date": time.strftime("%Y-%m-%d"), "pause": PAUSE}
    models = {}
    for name in args.models.split(","):
        path = model_path(name, args.cache)
        print(f"measuring {name} ({path}) ...", file=sys.stderr, flush=True)
        medians, every = bench_model(build, path, TENSOR[name], args.runs)
        models[name] = {"path": shown(path), "tensor": TENSOR[name], "facts": model_facts(path),
                        "medians": medians, "every": every}
    header["machine"] += f", {os.getloadavg()[0]:.2f} at the end"
    header["recipes"] = {
        "decoder": "transformers.LlamaConfig(" + ", ".join(f"{k}={v}" for k, v in DECODER.items())
                   + "), random weights (seed 0), input_ids of shape (1, 16), through "
                   "torch.onnx.export(..., dynamo=True, external_data=True)",
        "chain": f"{CHAIN_NODES:,} Add nodes in a chain, node i adding its own initializer w{{i}} "
                 f"of shape {CHAIN_SHAPE} float32 (onnx.helper), saved inline with onnx.save"}
    write_report(args.out, header, models)
    print(args.out.read_text())


if __name__ == "__main__":
    main()
