"""ONNX Runtime sessions: onnxmap.ort against onnxruntime.InferenceSession(path) on one model, in
fresh processes, alternated, medians (issue 65's targets):

    $(tools/venv.sh pypi)/bin/python bench/ort_bench.py --onnxmap build/tools/onnxmap/onnxmap \\
        --dir WORK --out bench/ort.md

(with the PyPI-built package importable: PYTHONPATH naming a wheel's install, or a build made
against PyPI's NumPy). The model is synth's float32 Llama shape with finite weights, about
1.8 GB, written inline (INLINE) and converted to external data (EXTERNAL, 4096-aligned: what ORT
maps itself). Each case is a new process that creates the session, runs it once on 8 tokens
and reports the creation time and the anonymous memory (RssAnon) it added. Page cache warm (the
files are read once before). Cases: ORT on each file with pre-packing on (its default) and off,
onnxmap.ort on the inline file with each."""
import argparse
import json
import statistics
import subprocess
import sys
import time

CASE = r"""
import json, sys, time, numpy as np, onnxruntime as ort
how, path, prepacking = sys.argv[1], sys.argv[2], sys.argv[3] == "on"
def anon():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("RssAnon"))
if how == "onnxmap":
    import onnxmap.ort
o = ort.SessionOptions()
if not prepacking:
    o.add_session_config_entry("session.disable_prepacking", "1")
before = anon()
start = time.perf_counter()
if how == "onnxmap":
    s = onnxmap.ort.InferenceSession(path, o, ["CPUExecutionProvider"])
else:
    s = ort.InferenceSession(path, o, ["CPUExecutionProvider"])
created = time.perf_counter() - start
s.run(None, {"input_ids": np.arange(8, dtype=np.int64)})
print(json.dumps({"create_s": created, "anon_mib": (anon() - before) / 1024}))
"""

CASES = [("ort", "inline", "on"), ("ort", "inline", "off"), ("ort", "external", "on"),
         ("ort", "external", "off"), ("onnxmap", "inline", "on"), ("onnxmap", "inline", "off")]


def run_case(how, path, prepacking):
    done = subprocess.run([sys.executable, "-c", CASE, how, path, prepacking],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--onnxmap", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    files = {"inline": f"{a.dir}/inline.onnx", "external": f"{a.dir}/external.onnx"}
    subprocess.run([a.onnxmap, "synth", files["inline"], "--layers", "10", "--hidden", "2048",
                    "--ffn", "5632", "--dtype", "float32", "--finite"], check=True)
    subprocess.run([a.onnxmap, "convert", files["inline"], files["external"], "--external-data"],
                   check=True, capture_output=True)
    for path in files.values():  # warm the page cache
        subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)
        subprocess.run(["cat", path + ".data"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = {case: [] for case in CASES}
    for _ in range(a.repeat):
        for case in CASES:
            seen[case].append(run_case(case[0], files[case[1]], case[2]))
    median = {c: {k: statistics.median(r[k] for r in runs) for k in ("create_s", "anon_mib")}
              for c, runs in seen.items()}
    write_table(a, median, seen)


def versions():
    """The onnxruntime and NumPy the cases ran on."""
    done = subprocess.run([sys.executable, "-c", "import numpy, onnxruntime; print("
                           "onnxruntime.__version__, numpy.__version__)"],
                          capture_output=True, text=True, check=True)
    ort_version, numpy_version = done.stdout.split()
    return f"onnxruntime {ort_version} from PyPI, NumPy {numpy_version}"


def write_table(a, median, seen):
    ort_ext_off = median[("ort", "external", "off")]
    ort_inline_on = median[("ort", "inline", "on")]
    lines = [
        "# ONNX Runtime sessions: onnxmap.ort against ORT's own load",
        "",
        f"Written by `bench/ort_bench.py` on {time.strftime('%Y-%m-%d')}: synth's float32 model "
        "(10 layers, hidden 2048, MLP 5632, finite weights; 1.78 GB) inline and as 4096-aligned "
        f"external data, {versions()}, CPU (2 shared cores), page cache warm. Each figure "
        f"is the median of {a.repeat} fresh processes, the cases alternated; anonymous memory is "
        "RssAnon after the first run (8 tokens) less before the session. Ratios: creation against "
        "ORT on the external-data file with pre-packing off (the bar: what ORT costs where it maps "
        "the weights itself), and against ORT on the inline file with its defaults.",
        "",
        "| session | file | pre-packing | create (s) | anon memory (MiB) | vs ORT external, off "
        "| vs ORT inline, on |",
        "|---|---|---|---|---|---|---|",
    ]
    for case in CASES:
        m = median[case]
        lines.append(f"| {case[0]} | {case[1]} | {case[2]} | {m['create_s']:.3f} | "
                     f"{m['anon_mib']:.0f} | {m['create_s'] / ort_ext_off['create_s']:.2f}x | "
                     f"{m['create_s'] / ort_inline_on['create_s']:.2f}x |")
    lines += ["", "Every run (create s, anon MiB):", ""]
    for case, runs in seen.items():
        figures = ", ".join(f"{r['create_s']:.3f} s / {r['anon_mib']:.0f}" for r in runs)
        lines.append(f"- {' '.join(case)}: {figures}")
    with open(a.out, "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
