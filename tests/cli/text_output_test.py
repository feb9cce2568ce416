"""What a person sees: every verb that prints, in its text form, on every model of the corpus and
every fixture, plus golden outputs that pin the layout of each verb on one small model.

Each run must exit 0 (check: 0, or 1 with its findings), print nothing on stderr for a model that
opens, and never show C++ exception text or an internal error. The text and --json forms of a verb
must agree (same rows, same nodes). Without the corpus (a user's clone has no ../shared) the
corpus cases are skipped and the fixtures and goldens still run.

A layout change rewrites tests/cli/golden/ with --update-golden (then read the diff):

    ONNXMAP_EXE=build/tools/onnxmap/onnxmap python3 -m pytest -p no:cacheprovider \\
        tests/cli/text_output_test.py -k golden --update-golden
"""
import json
import pathlib
import re

import pytest

import golden_model

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
# Text that only a C++ exception or a crash puts in front of a person.
LEAKS = ("basic_string", "std::", "what()", "internal error", "terminate called",
         "Sanitizer", "Segmentation fault", "Aborted")
# Every verb; each one that prints takes --json (get writes a file or .npy bytes, hash a
# manifest, which is JSON).
VERBS = ("check", "convert", "dump", "get", "graph", "hash", "info", "load", "ls", "synth",
         "verify")


@pytest.fixture(scope="session")
def run(onnxmap):
    return lambda *args: onnxmap(*args, timeout=300)


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
        problems.append(f"{verb}: exit {run.returncode}: "
                        f"{run.stderr.decode(errors='replace')[:300]}")
    if good and run.returncode == 0 and run.stderr:
        problems.append(f"{verb}: stderr: {run.stderr.decode(errors='replace')[:300]}")
    if good and not run.stdout.strip() and verb.split()[0] not in ("get",):
        problems.append(f"{verb}: printed nothing")
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


def get_runs(run, path, scratch, rows):
    """(label, run) for `get` of the model's first and last tensor to a file: .npy where the
    dtype has one, --raw where `get` says it has none."""
    out = []
    for i, row in enumerate({id(r): r for r in rows[:1] + rows[-1:]}.values()):
        target = scratch / f"get-{i}"
        r = run("get", path, row["path"], "-o", target)
        if r.returncode == 2 and b"--raw" in r.stderr and not leak_in(r):
            r = run("get", path, row["path"], "--raw", target)
        out.append((f"get {row['path']}", r))
        target.unlink(missing_ok=True)
    return out


def model_problems(run, path, scratch):
    """What is wrong with every verb in its text form on one model."""
    runs = [(" ".join(args), run(args[0], path, *args[1:])) for args in (
        ("info",), ("info", "--stats"), ("ls",), ("graph",), ("dump",), ("load",))]
    ls_json = json.loads(run("ls", path, "--json").stdout)
    runs += get_runs(run, path, scratch, ls_json)
    problems = [p for verb, r in runs for p in run_problems(verb, r)]
    problems += run_problems("check", run("check", path), check_exit=True)
    problems += agreement_problems(run, path, ls_json)
    # The model's manifest, and the model verified against it.
    hashed = run("hash", path)
    problems += run_problems("hash", hashed)
    if hashed.returncode == 0:
        manifest = scratch / "manifest.json"
        manifest.write_bytes(hashed.stdout)
        problems += run_problems("verify", run("verify", path, manifest))
        manifest.unlink()
    return problems


def assert_text_forms(run, path, scratch):
    problems = model_problems(run, path, scratch)
    assert not problems, f"{path}:\n" + "\n".join(problems[:10])


def test_corpus_model_text_forms(run, corpus_model, tmp_path):
    assert_text_forms(run, corpus_model, tmp_path)


def test_fixture_text_forms(run, fixture_model, tmp_path):
    assert_text_forms(run, fixture_model, tmp_path)


@pytest.fixture(scope="module")
def made(run, tmp_path_factory):
    """The golden model and an LLM-shaped model with external data, written now."""
    folder = tmp_path_factory.mktemp("made")
    golden_model.write(folder)
    synth = run("synth", folder / "llm.onnx", "--layers", 2, "--hidden", 64, "--external-data")
    assert synth.returncode == 0, f"synth failed: {synth.stderr.decode()}"
    return folder


@pytest.mark.parametrize("name", ["golden.onnx", "llm.onnx"])
def test_made_model_text_forms(run, made, name, tmp_path):
    assert_text_forms(run, made / name, tmp_path)


def test_help_lists_every_verb(run):
    listed = run("--help").stdout.decode()
    missing = [verb for verb in VERBS if f"  {verb} " not in listed]
    assert not missing, f"--help does not list {missing}:\n{listed}"


@pytest.mark.parametrize("verb", VERBS)
def test_verb_help(run, verb):
    """Each verb's --help exits 0 with its usage, and every verb that prints offers --json."""
    r = run(verb, "--help")
    text = r.stdout.decode()
    assert r.returncode == 0 and not r.stderr and "Usage:" in text, \
        f"exit {r.returncode}, {r.stderr.decode()[:200]}"
    if verb not in ("get", "hash"):
        assert "--json" in text, f"{verb} --help: no --json"


def normalized(text):
    """Output with what changes from run to run (times, rates) replaced by placeholders."""
    text = re.sub(r"CPU \d+\.\d+ s user, \d+\.\d+ s system", "CPU U s user, S s system", text)
    return re.sub(r"\d+\.\d+ s, \d+\.\d+ GB/s", "T s, R GB/s", text)


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    """The golden model, written now in a folder of its own."""
    return golden_model.write(tmp_path_factory.mktemp("golden"))


@pytest.mark.parametrize("name", golden_model.VERBS)
def test_golden(run, golden, name, request):
    """The verb's text on the golden model, line by line against tests/cli/golden/NAME.txt."""
    r = run(*[golden if a == "MODEL" else a for a in golden_model.VERBS[name]])
    got = normalized(r.stdout.decode()).replace(str(golden.parent) + "/", "")
    expected_file = GOLDEN / f"{name}.txt"
    if request.config.getoption("--update-golden"):
        expected_file.write_text(got)
        pytest.skip(f"rewrote {expected_file}: read the diff")
    expected = expected_file.read_text().splitlines()
    lines = got.splitlines()
    for i in range(max(len(expected), len(lines))):
        want = expected[i] if i < len(expected) else "(no line)"
        have = lines[i] if i < len(lines) else "(no line)"
        assert want == have, f"golden {name} line {i + 1}:\n  want {want!r}\n  got  {have!r}"
    assert r.returncode == 0 and not r.stderr, f"exit {r.returncode}: {r.stderr.decode()[:300]}"
