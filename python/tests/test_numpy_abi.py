"""Every way out of the package that makes an array or a torch tensor (those test_load.py and
test_device.py do not judge already), under the NumPy this suite runs with (tools/test.sh runs it under Debian's NumPy 1.24 and under PyPI's NumPy 2): strides
that agree with shape and dtype, and the elements of onnx.numpy_helper; NumPy 2's array protocol
(copy=); and the package under the other NumPy major, in a second interpreter."""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import pytest

import onnxmap
from conftest import FIXTURE_MODELS, assert_same_array, c_strides, judge_array
from test_load import reference_tensor

NUMPY_MAJOR = int(np.__version__.split(".")[0])


def judged_tensors(path):
    """(name, expected array) of every tensor of `path` that onnx can read."""
    reference = onnx.load(str(path))
    out = []
    with onnxmap.open(path) as model:
        for name in model.keys():
            expected = judge_array(reference_tensor(reference, model[name].path), str(path.parent))
            if expected is not None:
                out.append((name, expected))
    return out


def rows_of(expected, count):
    return expected[:count] if expected.ndim else expected


@pytest.mark.parametrize("name", FIXTURE_MODELS)
def test_tensor_arrays_and_rows(fixtures, name):
    path = fixtures / name
    with onnxmap.open(path) as model:
        for key, expected in judged_tensors(path):
            tensor = model[key]
            what = f"{name}: {key}"
            assert_same_array(tensor.numpy(), expected, what)
            assert_same_array(np.asarray(tensor), expected, what + " (np.asarray)")
            if expected.ndim and expected.shape[0]:
                rows = min(2, expected.shape[0])
                assert_same_array(tensor.slice_rows(0, rows), rows_of(expected, rows),
                                  what + " (slice_rows)")


# load in each mode and its shards: test_load.py, whose assert_same_array checks strides too.
def test_read_gives_arrays_with_their_strides(fixtures):
    path = fixtures / "all_dtypes.onnx"
    judged = dict(judged_tensors(path))
    with onnxmap.open(path) as model:
        for key, array in model.read().items():
            if key in judged:
                assert_same_array(array, judged[key], f"{key} (read)")


@pytest.mark.parametrize("name", FIXTURE_MODELS)
def test_safe_open_numpy(fixtures, name):
    path = fixtures / name
    with onnxmap.safe_open(path, framework="np") as f:
        for key, expected in judged_tensors(path):
            assert_same_array(f.get_tensor(key), expected, f"{name}: {key} (get_tensor)")
            if expected.ndim:
                assert_same_array(f.get_slice(key)[:], expected, f"{name}: {key} (get_slice)")


def torch_bits(tensor):
    """A CPU torch tensor as a NumPy array of its elements (bfloat16 as uint16 bit patterns)."""
    import torch
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(np.uint16)
    return tensor.numpy()


def assert_torch_agrees(tensor, expected, what):
    """`tensor` is contiguous with the strides of its shape, and holds `expected`'s values
    (UINT16 and UINT32 come widened from safe_open: compared as values)."""
    assert tuple(tensor.stride()) == c_strides(tuple(tensor.shape), 1), what
    got = torch_bits(tensor)
    assert got.shape == expected.shape, what
    if got.dtype != expected.dtype:
        assert np.array_equal(got, expected.astype(got.dtype)), what
    else:
        assert got.tobytes() == expected.tobytes(), what


@pytest.mark.parametrize("name", FIXTURE_MODELS)
def test_torch_exits(fixtures, name):
    torch = pytest.importorskip("torch")
    path = fixtures / name
    judged = dict(judged_tensors(path))
    with onnxmap.open(path) as model:
        holdable = [key for key in judged if key in model.keys() and
                    getattr(torch, onnxmap.device.TORCH_DTYPES.get(model[key].data_type, ""),
                            None) is not None]
        loaded = model.load_to_torch("cpu", names=holdable)
    for key, tensor in loaded.items():
        assert_torch_agrees(tensor, judged[key], f"{name}: {key} (load_to_torch)")
    with onnxmap.safe_open(path, framework="pt") as f:
        for key in holdable:
            if f.model[key].data_type == "UINT64":
                continue  # safe_open refuses it: torch's uint64 lacks most operations
            assert_torch_agrees(f.get_tensor(key), judged[key], f"{name}: {key} (get_tensor)")


def test_array_protocol_copies(fixtures):
    """np.asarray is the view, np.array a writable copy; NumPy 2's copy=False refuses a tensor
    whose array cannot be a view of the file (decoded, or another dtype)."""
    with onnxmap.open(fixtures / "all_dtypes.onnx") as model:
        raw, typed = model["raw_float"], model["typed_float"]
        view = np.asarray(raw)
        assert view.ctypes.data == raw.numpy().ctypes.data and not view.flags.writeable
        copy = np.array(raw)
        assert copy.flags.writeable and copy.ctypes.data != view.ctypes.data
        assert np.array_equal(copy, view)
        assert np.asarray(raw, dtype=np.float64).dtype == np.float64
        if NUMPY_MAJOR < 2:
            return  # NumPy 1's asarray has no copy= and calls __array__(dtype) only
        assert np.asarray(raw, copy=False).ctypes.data == view.ctypes.data
        refused = r"tensor typed_float \(graph\.initializer\[\d+\]\) cannot be given without"
        with pytest.raises(ValueError, match=refused):
            np.asarray(typed, copy=False)
        with pytest.raises(ValueError, match="dtype is not the one asked for"):
            np.asarray(raw, dtype=np.float64, copy=False)
        assert np.array_equal(np.asarray(typed, copy=True), typed.numpy())


# Run by the other interpreter: each tensor of the model as (strides, bytes as hex), or the
# import's error.
DIGEST = """
import json, sys
try:
    import onnxmap
except ImportError as e:
    print(json.dumps({"import_error": str(e)}))
    sys.exit(0)
import numpy
with onnxmap.open(sys.argv[1]) as model:
    print(json.dumps({"numpy": numpy.__version__, "tensors": {
        k: [list(model[k].numpy().strides), model[k].numpy().tobytes().hex()]
        for k in model.keys() if model[k].data_type != "STRING"}}))
"""


def other_interpreter():
    """The interpreter with the other NumPy major: PyPI's venv (NumPy 2) from Debian's run,
    Debian's /usr/bin/python3 (NumPy 1.24) from the venv's run."""
    if NUMPY_MAJOR >= 2:
        return pathlib.Path("/usr/bin/python3")
    venv = os.environ.get("ONNXMAP_PYPI_VENV", "")
    return pathlib.Path(venv) / "bin" / "python" if venv else None


def test_the_package_under_the_other_numpy(fixtures):
    python = other_interpreter()
    if python is None or not python.exists():
        pytest.skip("no interpreter with the other NumPy major: ONNXMAP_PYPI_VENV is not set "
                    "(tools/test.sh sets it)")
    package = pathlib.Path(onnxmap.__file__).parent.parent
    path = fixtures / "all_dtypes.onnx"
    env = dict(os.environ, PYTHONPATH=str(package))
    done = subprocess.run([str(python), "-c", DIGEST, str(path)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    there = json.loads(done.stdout)
    built_with = tuple(int(n) for n in onnxmap._onnxmap._pybind11_version.split(".")[:2])
    if built_with < (2, 12):
        # Debian's pybind11 2.10 reads NumPy 1's descriptors only: the package says so.
        assert "import_error" in there, there
        assert (f"built with pybind11 {onnxmap._onnxmap._pybind11_version}" in
                there["import_error"] and "rebuild onnxmap with pybind11 2.12" in
                there["import_error"]), there
        return
    assert "tensors" in there, there
    with onnxmap.open(path) as model:
        for key, (strides, data) in there["tensors"].items():
            array = model[key].numpy()
            assert tuple(strides) == array.strides, f"{key} under NumPy {there['numpy']}"
            assert data == array.tobytes().hex(), f"{key} under NumPy {there['numpy']}"
