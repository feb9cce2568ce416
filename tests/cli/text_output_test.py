#!/usr/bin/python3
"""What a person sees: every verb that prints, in its text form, on every model of the corpus and
every fixture, plus golden outputs that pin the layout of each verb on one small model.

    text_output_test.py ONNXMAP [--corpus DIR] [--golden-only] [--update-golden]

Each run must exit 0 (check: 0, or 1 with its findings), print nothing on stderr for a model that
opens, and never show C++ exception text or an internal error. The text and --json forms of a verb
must agree (same rows, same nodes). Without the corpus (a user's clone has no ../shared) the
corpus part reports SKIP and the fixtures and goldens still run.
"""
import argparse
import concurrent.futures
import json
import pathlib
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "conformance"))
import golden_model  # noqa: E402  (beside this file)
import make_fixtures  # noqa: E402
from corpus_sample import sample  # noqa: E402

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
# Text that only a C++ exception or a crash puts in front of a person.
LEAKS = ("basic_string", "std::", "what()", "internal error", "terminate called",
         "Sanitizer", "Segmentation fault", "Aborted")


class Runner:
    def __init__(self, onnxmap, scratch):
        self.onnxmap = onnxmap
        self.scratch = scratch

    def __call__(self, *args):
        return subprocess.run([self.onnxmap, *map(str, args)], capture_output=True, timeout=300)


def leak_in(run):
    text = run.stdout.decode(errors="replace") + run.stderr.decode(errors="replace")
    return next((leak for leak in LEAKS if leak in text), None)


def run_problems(verb, run, check_exit=False):
    """What is wrong with one verb run on a model that opens, as a list of strings."""
    problems = []
    if leak := leak_in(run):
        problems.append(f"{verb}: shows {leak!r}: {run.stderr.decode(errors='replace')[:300]}")
    good = run.returncode == 0
    if check_exit and run.returncode == 1:
        # check's findings: at least one line on stdout, and the count on stderr.
        good = bool(run.stdout.strip()) and re.search(rb"\d+ problems?\n$", run.stderr)
        if not good:
            problems.append(f"{verb}: exit 1 without findings")
    elif not good:
        problems.append(f"{verb}: exit {run.returncode}: {run.stderr.decode(errors='replace')[:300]}")
    if good and run.returncode == 0 and run.stderr:
        problems.append(f"{verb}: stderr: {run.stderr.decode(errors='replace')[:300]}")
    if good and not run.stdout.strip() and verb.split()[0] not in ("get",):
        problems.append(f"{verb}: printed nothing")
    return problems


def agreement_problems(run, path, ls_json):
    """The text and JSON forms of ls and graph list the same tensors and nodes."""
    problems = []
    ls_text = run("ls", path).stdout.decode(errors="replace").splitlines()
    if len(ls_text) != len(ls_json) + 1:
        problems.append(f"ls: {len(ls_text) - 1} text rows, {len(ls_json)} JSON rows")
    graph = json.loads(run("graph", path, "--json").stdout)
    nodes = sum(len(g["nodes"]) for g in walk_graphs(graph))
    text = run("graph", path).stdout.decode(errors="replace").splitlines()
    node_lines = sum(1 for line in text if " = " in line and not line.lstrip().startswith(
        ("input ", "init ", "output ", "graph ", "function ")))
    if nodes != node_lines:
        problems.append(f"graph: {node_lines} node lines, {nodes} nodes in --json")
    return problems


def walk_graphs(model):
    """Every GRAPH and FUNCTION object of a `graph --json` answer."""
    pending = ([model["graph"]] if "graph" in model else []) + list(model["functions"])
    while pending:
        g = pending.pop()
        yield g
        for node in g["nodes"]:
            for attribute in node["attributes"]:
                pending += attribute.get("graphs", [])


def get_runs(run, path, scratch, rows):
    """(label, run) for `get` of the model's first and last tensor to a file: .npy where the
    dtype has one, --raw where `get` says it has none."""
    out = []
    for row in {id(r): r for r in rows[:1] + rows[-1:]}.values():
        target = scratch / f"get-{abs(hash((str(path), row['path'])))}"
        r = run("get", path, row["path"], "-o", target)
        if r.returncode == 2 and b"--raw" in r.stderr and not leak_in(r):
            r = run("get", path, row["path"], "--raw", target)
        out.append((f"get {row['path']}", r))
        target.unlink(missing_ok=True)
    return out


def model_problems(run, path, scratch):
    """Every verb in its text form on one model; returns (verb runs, problems)."""
    runs = [(" ".join(args), run(args[0], path, *args[1:])) for args in (
        ("info",), ("info", "--stats"), ("ls",), ("graph",), ("dump",), ("load",))]
    ls_json = json.loads(run("ls", path, "--json").stdout)
    runs += get_runs(run, path, scratch, ls_json)
    problems = [p for verb, r in runs for p in run_problems(verb, r)]
    check = run("check", path)
    problems += run_problems("check", check, check_exit=True)
    problems += agreement_problems(run, path, ls_json)
    return len(runs) + 1, problems


# Every verb; each one that prints takes --json (get writes a file or .npy bytes).
VERBS = ("check", "convert", "dump", "get", "graph", "info", "load", "ls", "synth")


def help_problems(run):
    """`onnxmap --help` names every verb; each verb's --help exits 0 with its usage, and every
    verb that prints offers --json."""
    problems = []
    top = run("--help")
    listed = top.stdout.decode()
    problems += [f"--help does not list {verb}" for verb in VERBS if f"  {verb} " not in listed]
    for verb in VERBS:
        r = run(verb, "--help")
        text = r.stdout.decode()
        if r.returncode != 0 or r.stderr or "Usage:" not in text:
            problems.append(f"{verb} --help: exit {r.returncode}, {r.stderr.decode()[:200]}")
        if verb != "get" and "--json" not in text:
            problems.append(f"{verb} --help: no --json")
    return problems


def normalized(text):
    """Output with what changes from run to run (times, rates) replaced by placeholders."""
    text = re.sub(r"CPU \d+\.\d+ s user, \d+\.\d+ s system", "CPU U s user, S s system", text)
    return re.sub(r"\d+\.\d+ s, \d+\.\d+ GB/s", "T s, R GB/s", text)


def golden_problems(run, folder, update):
    """Each verb's text on the golden model, line by line against tests/cli/golden/VERB.txt."""
    model = golden_model.write(folder)
    problems = []
    for name, args in golden_model.VERBS.items():
        r = run(*[model if a == "MODEL" else a for a in args])
        got = normalized(r.stdout.decode()).replace(str(folder) + "/", "")
        expected_file = GOLDEN / f"{name}.txt"
        if update:
            expected_file.write_text(got)
            continue
        expected = expected_file.read_text().splitlines()
        lines = got.splitlines()
        for i in range(max(len(expected), len(lines))):
            want = expected[i] if i < len(expected) else "(no line)"
            have = lines[i] if i < len(lines) else "(no line)"
            if want != have:
                problems.append(f"golden {name} line {i + 1}:\n  want {want!r}\n  got  {have!r}")
                break
        if r.returncode != 0 or r.stderr:
            problems.append(f"golden {name}: exit {r.returncode}: {r.stderr.decode()[:300]}")
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("onnxmap")
    parser.add_argument("--corpus")
    parser.add_argument("--golden-only", action="store_true")
    parser.add_argument("--update-golden", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = pathlib.Path(scratch_name)
        run = Runner(args.onnxmap, scratch)
        golden_folder = scratch / "golden"
        golden_folder.mkdir()
        failed = golden_problems(run, golden_folder, args.update_golden) + help_problems(run)
        for p in failed:
            print("FAIL " + p)
        if args.golden_only or args.update_golden:
            print(f"{len(golden_model.VERBS) + 1 - len(failed)} passed, {len(failed)} failed")
            return 1 if failed else 0
        models = model_paths(args.corpus, scratch, run)
        passed, verb_runs = len(golden_model.VERBS) + 1 - len(failed), 0
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            results = pool.map(lambda p: (p, model_problems(run, p, scratch)), models)
            for path, (runs, problems) in results:
                verb_runs += runs
                if problems:
                    failed.append(path)
                    print(f"FAIL {path}")
                    for p in problems[:10]:
                        print(f"     {p}")
                else:
                    passed += 1
        print(f"{len(models)} models, {verb_runs} verb runs in text form")
        print(f"{passed} passed, {len(failed)} failed")
        return 1 if failed else 0


def model_paths(corpus, scratch, run):
    """The corpus's .onnx files (or a SKIP line without it) and the fixtures, written now: the
    conformance fixtures, the golden model and an LLM-shaped model with external data."""
    paths = []
    if corpus and pathlib.Path(corpus).is_dir():
        paths += sample(sorted(pathlib.Path(corpus).rglob("*.onnx")))
    else:
        print(f"SKIP: corpus {corpus} not found (it lives in ../shared, absent from a user's "
              "clone); only the fixtures and goldens ran")
    fixtures = scratch / "fixtures"
    fixtures.mkdir()
    make_fixtures.write_models(fixtures)
    golden_model.write(fixtures)
    synth = run("synth", fixtures / "llm.onnx", "--layers", 2, "--hidden", 64, "--external-data")
    if synth.returncode != 0:
        raise SystemExit(f"synth failed: {synth.stderr.decode()}")
    return paths + sorted(fixtures.rglob("*.onnx"))


if __name__ == "__main__":
    sys.exit(main())
