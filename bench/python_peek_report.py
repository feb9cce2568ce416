"""The page bench/python_peek.py writes (bench/exporters.md): the models, the medians, every
run, and issue 63's targets, each met or missed with the figures that say why."""
import pathlib

MIB = 1024.0
ROWS = [  # label, what it measures
    ("onnx", "onnx.load(path, load_external_data=False) + len(graph.node), node[-1].op_type + "
             "the tensor's initializer (its data file read) to_array().sum()"),
    ("onnxmap", "onnxmap.open + len(graph.nodes), nodes[-1].op_type + model[name].numpy().sum()"),
    ("onnx_ir", "onnx_ir.load + len(graph), graph[-1].op_type + "
                "initializers[name].const_value.numpy().sum()"),
    ("onnxmap-open", "onnxmap.open alone (no NumPy imported)"),
    ("cpp-open", "C++ Model::open alone (bench/rss_probe onnxmap-open)"),
]
PROCESSES = [
    ("info-process", "`onnxmap info` (C++)"),
    ("cpp-open-process", "bench/rss_probe onnxmap-open (C++)"),
    ("python-process", "Python: interpreter, imports, onnxmap.open + nodes + tensor"),
]


def ratio(a, b):
    return a / b if b else float("inf")


def model_table(name, model):
    f = model["facts"]
    return (f"| {name} | {f['producer']} | {f['files']} | {f['file_bytes'] / 1e9:.3f} GB | "
            f"{f['weight_bytes'] / 1e9:.3f} GB | {f['tensors']:,} ({f['external']:,} external) | "
            f"{f['nodes']:,} | {f['metadata_bytes'] / 1e6:.2f} MB | `{model['tensor']}` |")


def steps(m):
    s = m.get("steps", {})
    if "nodes" not in s:
        return ""
    return (f"{s['open']:.2f} / {s['nodes'] - s['open']:.3f} / {s['tensor'] - s['nodes']:.3f}")


def figure_rows(model):
    med = model["medians"]
    onnx = med["onnx"]
    out = []
    for label, what in ROWS:
        m = med[label]
        peak = f"{m['peak_kib'] / MIB:.1f}" if "peak_kib" in m else "-"
        anon = f"{m['anon_kib'] / MIB:.1f}" if "anon_kib" in m else "-"
        vs_peak = (f"1/{ratio(onnx['peak_kib'], m['peak_kib']):.1f}"
                   if "peak_kib" in m and label != "onnx" else "")
        speed = f"{ratio(onnx['ms'], m['ms']):.1f}x" if label != "onnx" else "1x"
        imports = f"{m['import_ms']:.0f}" if "import_ms" in m else "-"
        out.append(f"| {what} | {m['ms']:.2f} | {steps(m)} | {imports} | {peak} | {anon} | "
                   f"{speed} | {vs_peak} |")
    return out


def process_rows(model):
    med = model["medians"]
    return [f"| {what} | {med[label]['ms']:.1f} | {med[label]['peak_kib'] / MIB:.1f} |"
            for label, what in PROCESSES]


def every_run(model):
    every = model["every"]
    return [f"| {label} | " + ", ".join(f"{r['ms']:.2f}" for r in every[label]) + " |"
            for label in every]


def paired_ratio(every, a, b):
    """The median over the rounds of a's time over b's: the two ran one after the other in each
    round, so load that comes and goes between rounds falls on both."""
    ratios = sorted(ratio(x["ms"], y["ms"]) for x, y in zip(every[a], every[b]))
    middle = len(ratios) // 2
    return ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2


def targets(models):
    """(target, {model: (figure text, met)}) for issue 63's three targets."""
    speed, memory, opening = {}, {}, {}
    for name, model in models.items():
        med = model["medians"]
        x = ratio(med["onnx"]["ms"], med["onnxmap"]["ms"])
        speed[name] = (f"{x:.1f}x ({med['onnxmap']['ms']:.2f} ms against "
                       f"{med['onnx']['ms']:.2f} ms)", x >= 5)
        share = ratio(med["onnxmap"]["peak_kib"], med["onnx"]["peak_kib"])
        private = ratio(med["onnxmap"]["anon_kib"], med["onnx"]["anon_kib"])
        memory[name] = (f"{share:.3f} of it ({med['onnxmap']['peak_kib'] / MIB:.1f} MiB against "
                        f"{med['onnx']['peak_kib'] / MIB:.1f}; private {private:.3f})",
                        share <= 0.1)
        r = paired_ratio(model["every"], "onnxmap-open", "cpp-open")
        opening[name] = (f"{r:.2f}x, the median of each round's ratio (medians "
                         f"{med['onnxmap-open']['ms']:.2f} ms against "
                         f"{med['cpp-open']['ms']:.2f} ms)", r <= 1.2)
    return [("open + nodes + one tensor at least 5x faster than onnx.load", speed),
            ("at most a tenth of onnx.load's peak memory (extra peak RSS)", memory),
            ("Python's open within 1.2x of C++'s", opening)]


def reasons(models, checks):
    """A line for each target missed, from the figures: where the time or memory goes."""
    out = []
    for target, per_model in checks:
        for name, (_, met) in per_model.items():
            if met:
                continue
            med, facts = models[name]["medians"], models[name]["facts"]
            s = med["onnxmap"]["steps"]
            if target.startswith("open +"):
                out.append(f"- {name}, speed: of onnxmap's {med['onnxmap']['ms']:.2f} ms, the "
                           f"open takes {s['open']:.2f} (C++ alone: {med['cpp-open']['ms']:.2f}, "
                           f"the index pass over {facts['metadata_bytes'] / 1e6:.1f} MB of "
                           f"metadata), the node list {s['nodes'] - s['open']:.3f}, the tensor "
                           f"{s['tensor'] - s['nodes']:.3f}. The C++ open alone is "
                           f"{ratio(med['onnx']['ms'], med['cpp-open']['ms']):.1f}x faster than "
                           "onnx's peek: the target needs a faster index pass, not the binding.")
            elif target.startswith("at most"):
                out.append(f"- {name}, memory: onnxmap's extra peak "
                           f"{med['onnxmap']['peak_kib'] / MIB:.1f} MiB is the index "
                           f"({med['cpp-open']['index_kib'] / MIB:.1f} MiB of heap) and the "
                           f"model file's pages the index pass reads (mapped, shared with the "
                           f"page cache; the file is {facts['model_file_bytes'] / 2**20:.1f} MiB"
                           f"); its private memory is "
                           f"{med['onnxmap']['anon_kib'] / MIB:.1f} MiB against onnx's "
                           f"{med['onnx']['anon_kib'] / MIB:.1f}.")
            else:
                every = models[name]["every"]
                fastest = [min(r["ms"] for r in every[k]) for k in ("onnxmap-open", "cpp-open")]
                out.append(f"- {name}, open: Python {med['onnxmap-open']['ms']:.2f} ms against "
                           f"C++ {med['cpp-open']['ms']:.2f} ms (the fastest runs: "
                           f"{fastest[0]:.2f} and {fastest[1]:.2f} ms).")
    return out


def write_report(out, header, models):
    names = list(models)
    checks = targets(models)
    lines = [
        "# A quick look from Python at exporters' models",
        "",
        "Issue 63's targets for a metadata peek from Python: open, the node list and one "
        "tensor's bytes at least 5x faster than `onnx.load(path, load_external_data=False)` "
        "with at most a tenth of its peak memory, and Python's open within 1.2x of the C++ "
        "open. `bench/python_peek.py` made the models and measured them on "
        f"{header['date']}; every figure is a median of {header['runs']} rounds, each round "
        "every measurement once in a fresh process, in turn, each round starting one later; "
        "the Python/C++ open ratio is the median of each round's ratio. To run it again (the "
        "models are kept in `~/.cache/onnxmap/bench/python-peek`): `PYTHONPATH=SITE "
        "$(tools/venv.sh pypi)/bin/python bench/python_peek.py BUILD`, SITE the folder the "
        "wheel is installed in (`meson test -C BUILD python-pypi` leaves it in "
        "`BUILD/python/tests/pypi/site`).",
        "",
        f"- Machine: {header['machine']}.",
        f"- Versions: {header['versions']}.",
        "- Times: the work alone in its process, after the imports and a pause of "
        f"{header['pause']} s (NumPy's OpenBLAS threads spin for about 0.1 s after its import, "
        "taking a core from whatever runs then: onnx and onnx-ir import NumPy, onnxmap only "
        "where an array is made). Memory: the kernel's high-water mark of resident pages "
        "(VmHWM, reset after the imports) above the resident set then, mapped file pages "
        "included; private: RssAnon added. Whole processes: no pause.",
        "",
        "## Results",
        "",
        "| target | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for target, per_model in checks:
        cells = [f"{text}: **{'met' if met else 'missed'}**" for text, met in
                 (per_model[n] for n in names)]
        lines.append(f"| {target} | " + " | ".join(cells) + " |")
    missed = reasons(models, checks)
    lines += ["", "Missed, and why:" if missed else "Every target met.", ""] + missed
    lines += ["", "## The models", "",
              "| model | producer | files | on disk | weights | tensors | nodes | metadata | "
              "the one tensor |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [model_table(n, models[n]) for n in names]
    lines += [""] + [f"- {n}: {header['recipes'][n]}." for n in names]
    for name in names:
        model = models[name]
        lines += ["", f"## {name}", "", f"`{model['path']}`", "",
                  "| what | ms | open / nodes / tensor ms | imports ms | extra peak MiB | "
                  "private MiB | speed vs onnx | peak vs onnx |", "|---" * 8 + "|"]
        lines += figure_rows(model)
        lines += ["", "Whole processes (start, imports and exit included):", "",
                  "| process | ms | peak RSS MiB |", "|---|---|---|"]
        lines += process_rows(model)
        lines += ["", "Every run (ms):", "", "| what | runs |", "|---|---|"]
        lines += every_run(model)
    pathlib.Path(out).write_text("\n".join(lines) + "\n")
