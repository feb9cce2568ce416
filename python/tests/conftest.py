"""Shared by the pytest suite of the onnxmap package: the fixture models (made with python3-onnx
by tests/conformance/make_fixtures.py), the backend corpus (skipped visibly when absent), and
the judge's view of a tensor (onnx.numpy_helper.to_array)."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

SOURCE_ROOT = pathlib.Path(os.environ.get("ONNXMAP_SOURCE_ROOT",
                                          pathlib.Path(__file__).resolve().parents[2]))
CORPUS = pathlib.Path(os.environ.get("ONNXMAP_CORPUS",
                                     SOURCE_ROOT.parent / "shared" / "corpus" / "onnx-backend"))
ONNXMAP_EXE = os.environ.get("ONNXMAP_EXE", "")


def corpus_models():
    """Every .onnx file of the corpus, or [] when it is absent."""
    return sorted(CORPUS.rglob("*.onnx")) if CORPUS.is_dir() else []


def corpus_params():
    """pytest parameters over the corpus; one visibly skipped case without it."""
    models = corpus_models()
    if models:
        return [pytest.param(p, id=str(p.relative_to(CORPUS))) for p in models]
    return [pytest.param(None, marks=pytest.mark.skip(
        reason=f"corpus {CORPUS} not found (it lives in ../shared beside the checkout)"))]


@pytest.fixture(scope="session")
def fixtures(tmp_path_factory):
    """The folder of fixture models python3-onnx writes."""
    folder = tmp_path_factory.mktemp("fixtures")
    subprocess.run([sys.executable, str(SOURCE_ROOT / "tests/conformance/make_fixtures.py"),
                    str(folder)], check=True)
    return folder


FIXTURE_MODELS = ["all_dtypes.onnx", "features.onnx", "external_one_file.onnx",
                  "per_tensor/external_per_tensor.onnx"]


def judge_array(tensor_proto, folder=None):
    """numpy_helper.to_array of `tensor_proto` in the form onnxmap gives it (BFLOAT16 as its
    uint16 bit patterns), or None when onnx 1.12 cannot read it (typed COMPLEX, segments)."""
    if tensor_proto.HasField("segment"):
        return None
    try:
        expected = numpy_helper.to_array(tensor_proto, base_dir=folder or "")
    except (TypeError, ValueError):
        return None
    if tensor_proto.data_type == onnx.TensorProto.BFLOAT16:
        rounded = expected.astype(np.float32).view(np.uint32) >> 16
        return rounded.astype(np.uint16)
    return expected


def assert_same_array(got, expected, what):
    assert got.shape == expected.shape, what
    if expected.dtype == object:
        assert got.dtype == object and got.tolist() == expected.tolist(), what
        return
    assert got.dtype == expected.dtype, what
    assert got.tobytes() == expected.tobytes(), what
