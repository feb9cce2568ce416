"""The viewer's pages in a real browser: makes eight models (a small one, one replaced on disk
after the viewer opened it, a 320 GB sparse one, one of 360,003 nodes, and graph_models.py's
PaddleOCR-shaped, torch-exported, 300,001-node flat-named and If/Loop/Scan ones), takes the ten
real exporters' models of real_models.py (PaddleOCR, IS-Net quantized by ONNX Runtime, tf2onnx's
and torch's wake-word models, Silero VAD, ...) and torch 2.15's dynamo export of a Llama
(tests/exporters/), with two models whose weights are safetensors files (the Hub's shards, and
that export pointing into its checkpoint), starts `onnxmap view` on each and runs
browser_test.mjs (puppeteer-core driving the system's Chromium) against them. Screenshots of
every page land in WORK/view-screenshots/, WORK being ONNXMAP_BROWSER_WORK (tests/meson.build:
the build's tests/), with figures.txt: the graph page's figures (times, box and edge counts) the
script printed.

Skipped when Chromium is absent or cannot start; fails when node or npm is absent.
puppeteer-core (pinned in browser/package.json and package-lock.json) is installed with `npm ci`
into WORK/browser-modules, once per lock file; it downloads no browser.
"""
import hashlib
import os
import pathlib
import shutil
import subprocess

import pytest

import graph_models
import real_models
from viewer import Viewer

HERE = pathlib.Path(__file__).resolve().parent

# label, file, the arguments of `onnxmap synth` (or a graph_models.py kind)
MODELS = [
    ("small", "model.onnx", ["--layers", "2", "--hidden", "64"]),
    # Saved again (another dtype, renamed into place) after the viewer opened it: its pages show
    # the version opened, and the summary says the file on disk changed.
    ("replaced", "replaced.onnx", ["--layers", "2", "--hidden", "64", "--external-data"]),
    ("llm-320g", "llm-320g.onnx", ["--layers", "80", "--hidden", "8192", "--ffn", "28672",
                                   "--vocab", "128256", "--dtype", "float32", "--sparse"]),
    ("graph-heavy", "graph-heavy.onnx", ["--layers", "20000", "--hidden", "4", "--vocab", "16"]),
    ("paddle", "paddle.onnx", "paddle"),
    ("torch", "torch.onnx", "torch"),
    ("flat", "flat.onnx", "flat"),
    ("subgraphs", "subgraphs.onnx", "subgraphs"),
]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    folder = os.environ.get("ONNXMAP_BROWSER_WORK")
    return pathlib.Path(folder).resolve() if folder else tmp_path_factory.mktemp("browser")


@pytest.fixture(scope="module")
def chromium():
    """The Chromium to drive; skips where it is absent or cannot start."""
    chromium = os.environ.get("CHROMIUM") or "/usr/bin/chromium"
    if not (os.path.isfile(chromium) and os.access(chromium, os.X_OK)):
        pytest.skip(f"no Chromium at {chromium} (install Debian's chromium, or set CHROMIUM)")
    try:
        r = subprocess.run([chromium, "--headless", "--no-sandbox", "--dump-dom", "about:blank"],
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.skip(f"{chromium} --headless did not answer within 60 s")
    if r.returncode != 0 or "<html" not in r.stdout:
        pytest.skip(f"{chromium} --headless cannot start: {r.stderr.strip()[-400:]}")
    return chromium


@pytest.fixture(scope="module")
def node_and_npm():
    """node and npm; fails, saying what to install, where they are absent or too old."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        missing = " and ".join(name for name, path in (("node", node), ("npm", npm)) if not path)
        pytest.fail(f"{missing} not found on PATH: the browser tests need Node.js 18 or newer "
                    f"and npm (Debian: apt-get install nodejs npm; tools/setup.sh installs them)",
                    pytrace=False)
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 18:
        pytest.fail(f"node {version} is too old: puppeteer-core needs Node.js 18 or newer",
                    pytrace=False)
    return node, npm


@pytest.fixture(scope="module")
def modules(work, node_and_npm):
    """WORK/browser-modules/node_modules from the pinned lock file; kept while the lock is the
    same."""
    modules = work / "browser-modules"
    lock = (HERE / "browser" / "package-lock.json").read_bytes()
    stamp = modules / "node_modules" / ".onnxmap-lock-sha256"
    digest = hashlib.sha256(lock).hexdigest()
    if stamp.is_file() and stamp.read_text() == digest:
        return modules
    modules.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(HERE / "browser" / name, modules / name)
    r = subprocess.run([node_and_npm[1], "ci", "--no-audit", "--no-fund"], cwd=modules,
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"npm ci in {modules} failed (is the npm registry reachable?):\n"
                    f"{r.stdout[-2000:]}{r.stderr[-2000:]}", pytrace=False)
    stamp.write_text(digest)
    return modules


@pytest.fixture(scope="module")
def real_paths(work):
    """{id: path} of real_models.py's real exporters' models, in the cache view_real_test.py
    uses (WORK/real-models)."""
    return real_models.fetch_for_tests(work / "real-models")


def dynamo_llama():
    """torch's dynamo export of the exporters' corpus (tests/exporters/make_corpus.py), whose
    weights are renamed (val_105) and read by modules its metadata names; the corpus is made
    (once per machine) by the PyPI environment's interpreter, as python/tests/test_exporters.py
    makes it.
    Fails where ONNXMAP_PYPI_VENV is unset under CI, and skips so elsewhere."""
    venv = os.environ.get("ONNXMAP_PYPI_VENV")
    if not venv:
        why = ("ONNXMAP_PYPI_VENV is not set: the exporters' corpus is made in the PyPI "
               "environment (tools/test.sh sets it to the folder tools/venv.sh pypi makes)")
        if os.environ.get("CI"):
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    maker = HERE.parent / "exporters" / "make_corpus.py"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
    made = subprocess.run([str(pathlib.Path(venv) / "bin" / "python"), str(maker)],
                          capture_output=True, text=True, timeout=1800, env=env)
    assert made.returncode == 0, made.stderr[-3000:]
    return pathlib.Path(made.stdout.strip().splitlines()[-1]) / "torch-llama" / "model.onnx"


def safetensors_models(onnxmap, tmp_path):
    """Models whose data lives in safetensors files: the small model's weights in the Hub's
    shards, and the dynamo export pointing into the checkpoint it came from (convert
    --weights-from --share-transposed)."""
    shards = tmp_path / "shards" / "model.onnx"
    shards.parent.mkdir()
    subprocess.run([onnxmap.path, "synth", tmp_path / "st-source.onnx", "--layers", "2",
                    "--hidden", "64"], check=True, capture_output=True)
    subprocess.run([onnxmap.path, "convert", tmp_path / "st-source.onnx", shards,
                    "--data-format", "safetensors", "--shard-size", "256K"], check=True,
                   capture_output=True)
    export = dynamo_llama()
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    shutil.copyfile(export.parent / "checkpoint.safetensors", folder / "model.safetensors")
    subprocess.run([onnxmap.path, "convert", export, folder / "model.onnx", "--weights-from",
                    folder / "model.safetensors", "--share-transposed"], check=True,
                   capture_output=True)
    return [("safetensors-shards", shards), ("dynamo-llama-checkpoint", folder / "model.onnx")]


def test_pages_in_chromium(onnxmap, chromium, node_and_npm, modules, real_paths, work, tmp_path):
    shots = work / "view-screenshots"
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    viewers, failures = [], []
    try:
        for label, name, args in MODELS:
            path = tmp_path / name
            if isinstance(args, str):
                graph_models.write(args, str(path))
            else:
                subprocess.run([onnxmap.path, "synth", path, *args], check=True,
                               capture_output=True)
            viewers.append((label, Viewer(onnxmap.path, path).__enter__()))
            if label == "replaced":
                subprocess.run([onnxmap.path, "synth", path, *args, "--dtype", "bfloat16"],
                               check=True, capture_output=True)
        for model_id, path in real_paths.items():
            viewers.append((f"real-{model_id}", Viewer(onnxmap.path, path).__enter__()))
        viewers.append(("dynamo-llama", Viewer(onnxmap.path, dynamo_llama()).__enter__()))
        for label, path in safetensors_models(onnxmap, tmp_path):
            viewers.append((label, Viewer(onnxmap.path, path).__enter__()))
        command = [node_and_npm[0], str(HERE / "browser_test.mjs"), chromium, str(shots)]
        command += [f"{label}={v.url}" for label, v in viewers]
        # Run from the modules' folder: the script requires puppeteer-core from there.
        try:
            run = subprocess.run(command, cwd=modules, timeout=800, capture_output=True,
                                 text=True)
            print(run.stdout, run.stderr)
            figures = [line for line in run.stdout.splitlines() if line.startswith("FIGURE ")]
            (shots / "figures.txt").write_text("".join(f"{line[7:]}\n" for line in figures))
            status = run.returncode
            if status != 0:
                failures.append(f"browser_test.mjs exited with status {status} (its output "
                                f"names the failing checks; screenshots: {shots}/)")
        except subprocess.TimeoutExpired:
            failures.append("browser_test.mjs did not end within 800 s")
    finally:
        for label, v in viewers:
            code = v.stop()
            if code != 0:
                failures.append(f"{label}: the viewer exited with status {code} on Ctrl-C: "
                                f"{v.stderr[-1000:]}")
        for _, name, _ in MODELS:  # a 320 GB sparse file is best not left in the build folder
            (tmp_path / name).unlink(missing_ok=True)
    assert not failures, "\n".join(failures)
