"""The LLM files today's exporters write, through the suite's judges: torch's dynamo exporter on
Llama, Qwen2, Mixtral, GPT-2 and BERT with random weights (inline, and Llama with external
data), and Llama laid out again by onnx (one file per tensor) and onnx-ir (sharded, aligned, in
safetensors files): make_corpus.py writes them once per machine (corpus_folder()).

Run in the PyPI environment (tests/in_pypi_venv.py), so that the judges are today's releases:
onnx 1.23 (dump against MessageToDict, get against numpy_helper, the checker, onnx.load of each
converted copy) and ONNX Runtime (the same outputs from each converted copy as from the export,
on a fixed input). Every verb's text form on each, as on the backend corpus
(cli/text_output_test.py)."""
import pathlib
import sys

import numpy as np
import onnx
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "interop"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import make_corpus  # noqa: E402
from conformance_test import assert_conforms  # noqa: E402
from interop_test import assert_variant, reference  # noqa: E402,F401  (reference: a fixture)
from text_output_test import model_problems, run  # noqa: E402,F401  (run: a fixture)

ort = pytest.importorskip("onnxruntime")


@pytest.fixture(scope="session")
def corpus():
    """The corpus folder, its models made now where this machine has not made them yet."""
    folder = make_corpus.corpus_folder()
    make_corpus.make_all(folder)
    return folder


@pytest.fixture(params=make_corpus.NAMES)
def model(request, corpus):
    return corpus / request.param / "model.onnx"


def test_text_forms(run, model, tmp_path):
    problems = model_problems(run, model, tmp_path)
    assert not problems, f"{model}:\n" + "\n".join(problems[:10])


def test_dump_and_tensors_equal_onnx(onnxmap, model):
    assert_conforms(onnxmap, model, 10_000)


@pytest.mark.parametrize("variant", ["external", "inline", "per-tensor"])
def test_converted_copies_equal_onnx(onnxmap, reference, model, variant, tmp_path):
    assert_variant(onnxmap, reference, model, tmp_path, variant)


def outputs(path):
    """ONNX Runtime's outputs of the model at `path` on a fixed input (token ids 0..VOCAB-1),
    one thread, so that two runs of the same graph and weights agree bit for bit."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for given in session.get_inputs():
        assert given.type == "tensor(int64)", f"{given.name}: {given.type}"
        shape = [d if isinstance(d, int) else make_corpus.SEQUENCE for d in given.shape]
        feeds[given.name] = rng.integers(0, make_corpus.VOCAB, shape, dtype=np.int64)
    return session.run(None, feeds)


# convert's own size threshold (1 KiB): ONNX Runtime reads a shape input (a Reshape's shape, a
# ReduceMean's axes) only when it is inline, so "--size-threshold 0" makes models it refuses.
@pytest.mark.parametrize("variant", [["--external-data"], ["--inline"]],
                         ids=["external", "inline"])
def test_onnx_runtime_gives_the_same_outputs(onnxmap, model, variant, tmp_path):
    converted = tmp_path / "converted.onnx"
    done = onnxmap("convert", model, converted, *variant)
    assert done.returncode == 0, done.stderr.decode()
    onnx.checker.check_model(str(converted))
    expected, got = outputs(model), outputs(converted)
    assert len(got) == len(expected)
    for a, b in zip(expected, got):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
