"""safe_open as safetensors' API: keys, get_tensor, get_slice, metadata, dtype names and errors,
under np and pt, with torch tensors writable copy-on-write."""
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxmap
from conftest import judge_array

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    folder = tmp_path_factory.mktemp("safe_open")
    rng = np.random.default_rng(3)
    arrays = {"f32": rng.standard_normal((12, 5)).astype(np.float32),
              "f16": rng.standard_normal((8, 4)).astype(np.float16),
              "i64": np.arange(24, dtype=np.int64).reshape(6, 4),
              "boolean": rng.integers(0, 2, (4, 3)).astype(np.bool_),
              "bias": rng.standard_normal(7).astype(np.float32)}
    tensors = [numpy_helper.from_array(a, n) for n, a in arrays.items()]
    bf16 = helper.make_tensor("bf16", TensorProto.BFLOAT16, [2, 3],
                              np.array([0x3F80, 0xC020, 0x4040, 0, 0x8000, 0x7F80],
                                       np.uint16).tobytes(), raw=True)
    tensors.append(bf16)
    model = helper.make_model(helper.make_graph([], "g", [], [], initializer=tensors))
    helper.set_model_props(model, {"format": "pt", "author": "tests"})
    path = folder / "weights.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, location="weights.data",
                    size_threshold=0)
    return path, arrays


def mapping_of(address):
    """The permissions and the file of the mapping that holds `address` (/proc/self/maps)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            span, perms = line.split()[:2]
            low, high = (int(part, 16) for part in span.split("-"))
            if low <= address < high:
                return perms, line.split()[-1]
    return None


def test_numpy_framework(weights):
    path, arrays = weights
    with onnxmap.safe_open(path, framework="np") as f:
        assert f.keys() == list(arrays) + ["bf16"]
        assert f.metadata() == {"format": "pt", "author": "tests"}
        for name, array in arrays.items():
            got = f.get_tensor(name)
            assert got.dtype == array.dtype and np.array_equal(got, array)
        assert f.get_tensor("bf16").tolist() == [[0x3F80, 0xC020, 0x4040], [0, 0x8000, 0x7F80]]


def test_torch_framework_zero_copy(weights):
    path, arrays = weights
    with onnxmap.safe_open(path, framework="pt") as f:
        for name, array in arrays.items():
            got = f.get_tensor(name)
            assert isinstance(got, torch.Tensor)
            assert np.array_equal(got.numpy(), array), name
        bf16 = f.get_tensor("bf16")
        assert bf16.dtype == torch.bfloat16
        assert bf16.float().tolist() == [[1.0, -2.5, 3.0], [0.0, -0.0, float("inf")]]
        # No copy: the tensor's own pages of the data file, mapped copy-on-write.
        got = f.get_tensor("f32")
        perms, mapped = mapping_of(got.data_ptr())
        assert perms == "rw-p" and mapped == os.path.realpath(path.parent / "weights.data")


def test_torch_tensors_outlive_the_file_object(weights):
    path, arrays = weights
    with onnxmap.safe_open(path, framework="pt") as f:
        kept = {name: f.get_tensor(name) for name in arrays}
    del f
    for name, array in arrays.items():
        assert np.array_equal(kept[name].numpy(), array)


@pytest.mark.parametrize("framework", ["np", "pt"])
def test_get_slice(weights, framework):
    path, arrays = weights
    full = arrays["f32"]
    with onnxmap.safe_open(path, framework=framework) as f:
        part = f.get_slice("f32")
        assert part.get_shape() == [12, 5] and part.get_dtype() == "F32"
        cases = [np.s_[2:7], np.s_[:3], np.s_[-4:], np.s_[::3], np.s_[9:1:-2], np.s_[3],
                 np.s_[-1], np.s_[2:6, 1:3], np.s_[..., 2], np.s_[5:5], np.s_[:, ::2]]
        for key in cases:
            got = part[key]
            got = got.numpy() if framework == "pt" else got
            assert np.array_equal(got, full[key]), key
        with pytest.raises(IndexError):
            part[12]
        bias = f.get_slice("bias")[2:5]
        assert np.array_equal(bias.numpy() if framework == "pt" else bias, arrays["bias"][2:5])


def test_slice_reads_only_its_rows(weights):
    path, _ = weights
    with onnxmap.open(path) as model:
        rows = model["f32"].slice_rows(4, 8)
        whole = model["f32"].numpy()
        assert rows.ctypes.data == whole.ctypes.data + 4 * 5 * 4


def test_unknown_framework(weights):
    with pytest.raises(ValueError):
        onnxmap.safe_open(weights[0], framework="tf")


def test_fixture_dtypes_under_torch(fixtures):
    reference = onnx.load(str(fixtures / "all_dtypes.onnx"))
    with onnxmap.safe_open(fixtures / "all_dtypes.onnx", framework="pt") as f:
        for t in reference.graph.initializer:
            expected = judge_array(t)
            if expected is None or t.data_type in (TensorProto.STRING, TensorProto.UINT64,
                                                   TensorProto.BFLOAT16):
                continue
            got = f.get_tensor(t.name)
            np.testing.assert_array_equal(got.numpy(), expected, err_msg=t.name)


def test_torch_tensors_are_writable_copy_on_write(weights):
    path, arrays = weights
    data = path.parent / "weights.data"
    before = data.read_bytes()
    with onnxmap.safe_open(path, framework="pt") as f:
        for name, array in arrays.items():
            got = f.get_tensor(name)
            # The file's pages mapped private and writable: no copy until written.
            perms, mapped = mapping_of(got.data_ptr())
            assert perms.startswith("rw") and perms.endswith("p"), (name, perms)
            assert mapped == os.path.realpath(data), (name, mapped)
            got.add_(1) if array.dtype != np.bool_ else got.logical_not_()
            expected = array + 1 if array.dtype != np.bool_ else ~array
            assert np.array_equal(got.numpy(), expected), name
            assert np.array_equal(f.get_tensor(name).numpy(), array), name  # a fresh one
        rows = f.get_slice("f32")[2:5]
        rows.mul_(0)
        assert not rows.any() and np.array_equal(f.get_tensor("f32").numpy(), arrays["f32"])
    assert data.read_bytes() == before


def test_torch_tensors_of_a_read_model_are_writable_copies(weights):
    path, arrays = weights
    with onnxmap.safe_open(path, framework="pt", mode="read") as f:
        got = f.get_tensor("f32")
        got.add_(1)
        assert np.array_equal(got.numpy(), arrays["f32"] + 1)
        assert np.array_equal(f.get_tensor("f32").numpy(), arrays["f32"])


def test_missing_key_and_empty_metadata_as_safetensors(weights, tmp_path):
    path, _ = weights
    with onnxmap.safe_open(path, framework="np") as f:
        with pytest.raises(onnxmap.SafetensorError, match="File does not contain tensor nope"):
            f.get_tensor("nope")
        with pytest.raises(onnxmap.Error):
            f.get_slice("nope")
    bare = tmp_path / "bare.onnx"
    onnx.save_model(helper.make_model(helper.make_graph([], "g", [], [])), str(bare))
    with onnxmap.safe_open(bare) as f:
        assert f.metadata() is None and f.keys() == []


def test_missing_key_error_has_the_kind_of_onnxmap_errors(weights):
    path, _ = weights
    with onnxmap.safe_open(path, framework="np") as f:
        with pytest.raises(onnxmap.SafetensorError) as caught:
            f.get_tensor("nope")
    error = caught.value
    assert isinstance(error, onnxmap.Error)
    assert error.kind == "not_found"
    assert error.detail == "File does not contain tensor nope"
    assert (error.path, error.offset) == ("", None)


# ONNX data type number: (bytes per element, safetensors' name). The FLOAT8 numbers as
# onnx.proto has them (Debian's python3-onnx predates their names).
SAFETENSORS_NAMES = {TensorProto.BOOL: (1, "BOOL"), TensorProto.UINT8: (1, "U8"),
                     TensorProto.INT8: (1, "I8"), TensorProto.UINT16: (2, "U16"),
                     TensorProto.INT16: (2, "I16"), TensorProto.UINT32: (4, "U32"),
                     TensorProto.INT32: (4, "I32"), TensorProto.UINT64: (8, "U64"),
                     TensorProto.INT64: (8, "I64"), TensorProto.FLOAT16: (2, "F16"),
                     TensorProto.BFLOAT16: (2, "BF16"), TensorProto.FLOAT: (4, "F32"),
                     TensorProto.DOUBLE: (8, "F64"), 17: (1, "F8_E4M3"), 19: (1, "F8_E5M2")}


def test_get_dtype_gives_safetensors_names(tmp_path):
    tensors = []
    for dtype, (size, _) in SAFETENSORS_NAMES.items():
        tensor = TensorProto(name=f"t{dtype}", data_type=dtype, dims=[2], raw_data=b"\0" * 2 * size)
        tensors.append(tensor)
    path = tmp_path / "dtypes.onnx"
    graph = helper.make_graph([], "g", [], [], initializer=tensors)
    onnx.save_model(helper.make_model(graph), str(path))
    with onnxmap.safe_open(path) as f:
        for dtype, (_, name) in SAFETENSORS_NAMES.items():
            assert f.get_slice(f"t{dtype}").get_dtype() == name, dtype
