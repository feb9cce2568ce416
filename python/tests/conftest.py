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


def pytest_configure(config):
    config.addinivalue_line("markers", ONCE_MARKER)


# Cases whose judgment depends neither on the NumPy and onnx under them nor on a sanitizer, and
# that take a minute or more: run once, in the PyPI run (python/tests/meson.build deselects them
# in the others with -m "not once").
ONCE_MARKER = ("once: judged in the PyPI run only (the wheel users get): the same under Debian's "
               "NumPy and under a sanitizer, and slow")
once = pytest.mark.once


@pytest.fixture(scope="session")
def fixtures(tmp_path_factory):
    """The folder of fixture models python3-onnx writes."""
    folder = tmp_path_factory.mktemp("fixtures")
    subprocess.run([sys.executable, str(SOURCE_ROOT / "tests/conformance/make_fixtures.py"),
                    str(folder)], check=True)
    return folder


FIXTURE_MODELS = ["all_dtypes.onnx", "features.onnx", "external_one_file.onnx",
                  "per_tensor/external_per_tensor.onnx"]


# The NumPy dtype onnxmap gives each ONNX type whose elements NumPy has no type for: bit patterns
# (BFLOAT16, the 8- and 4-bit floats) or one element a byte (the 4- and 2-bit integers).
ONNXMAP_FORM = {"BFLOAT16": np.uint16, "FLOAT8E4M3FN": np.uint8, "FLOAT8E4M3FNUZ": np.uint8,
                "FLOAT8E5M2": np.uint8, "FLOAT8E5M2FNUZ": np.uint8, "FLOAT8E8M0": np.uint8,
                "FLOAT4E2M1": np.uint8, "UINT4": np.uint8, "INT4": np.int8, "UINT2": np.uint8,
                "INT2": np.int8}


def in_onnxmap_form(expected, data_type):
    """numpy_helper's array of an ONNX `data_type` in the dtype onnxmap gives it. onnx 1.15 and
    later give ml_dtypes' types (bfloat16, float8_e4m3fn, int4, ...): the floats are viewed as
    their bits, the integers converted; onnx 1.12 gives BFLOAT16 as float32 (its top 16 bits)."""
    name = onnx.TensorProto.DataType.Name(data_type)
    form = np.dtype(ONNXMAP_FORM.get(name, expected.dtype))
    if expected.dtype == form:
        return expected
    if name.startswith(("INT", "UINT")):
        return expected.astype(form)
    if expected.dtype.itemsize == form.itemsize:
        return expected.view(form)
    rounded = expected.astype(np.float32).view(np.uint32) >> 16
    return rounded.astype(form)


def judge_array(tensor_proto, folder=None):
    """numpy_helper.to_array of `tensor_proto` in the form onnxmap gives it (in_onnxmap_form),
    or None when the installed onnx cannot read it (typed COMPLEX and the newer types in onnx
    1.12, segments)."""
    if tensor_proto.HasField("segment"):
        return None
    try:
        expected = numpy_helper.to_array(tensor_proto, base_dir=folder or "")
    except (TypeError, ValueError, KeyError):  # KeyError: onnx 1.12 on a type it lacks
        return None
    return in_onnxmap_form(expected, tensor_proto.data_type)


def c_strides(shape, itemsize):
    """The strides of a C-contiguous array of `shape`."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.insert(0, step)
        step *= n
    return tuple(strides)


def assert_strides_agree(array, what):
    """An array onnxmap hands out is C-contiguous: its strides follow from its shape and item
    size. (A binding built for NumPy 1 run under NumPy 2 gave every stride as 0, and every
    element read as the first.) An array of no elements has any strides (NumPy gives 0s)."""
    if array.size == 0:
        return
    expected = c_strides(array.shape, array.dtype.itemsize)
    assert array.strides == expected, (f"{what}: strides {array.strides} for shape "
                                       f"{array.shape} of {array.dtype} (expected {expected})")


def assert_same_array(got, expected, what):
    assert_strides_agree(got, what)
    assert got.shape == expected.shape, what
    if expected.dtype == object:
        assert got.dtype == object and got.tolist() == expected.tolist(), what
        return
    assert got.dtype == expected.dtype, what
    assert got.tobytes() == expected.tobytes(), what
