"""4-bit and 2-bit tensors (UINT4, INT4, FLOAT4E2M1, UINT2, INT2) come one element per byte, as
`onnxmap get` writes them, through every path: Tensor.numpy(), slice_rows, load() in every mode.
onnx 1.12 has none of these types, so the models are written here on the wire and the expected
elements worked out with NumPy from the packing rule of onnx.proto (first element in the low
bits, two's complement for the signed types)."""
import subprocess

import numpy as np
import onnx
import pytest

import onnxmap
from conftest import ONNXMAP_EXE, assert_same_array, judge_array

TYPES = {"UINT4": (21, 4, False), "INT4": (22, 4, True), "FLOAT4E2M1": (23, 4, False),
         "UINT2": (25, 2, False), "INT2": (26, 2, True)}


def varint(value):
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number, value):
    """One protobuf field: an int as a varint, bytes as length-delimited."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def tensor_proto(name, data_type, dims, packed, typed=False):
    body = b"".join(field(1, d) for d in dims) + field(2, data_type) + field(8, name.encode())
    if typed:  # int32_data, one packed byte per entry
        return body + b"".join(field(5, b) for b in packed)
    return body + field(9, packed)


def unpack(packed, bits, signed, count):
    """The expected elements, one per byte, from the packing rule."""
    per_byte = 8 // bits
    p = np.frombuffer(packed, np.uint8)
    shifts = np.arange(per_byte, dtype=np.uint8) * bits
    elements = ((p[:, None] >> shifts) & ((1 << bits) - 1)).reshape(-1)[:count]
    if signed:
        sign = 1 << (bits - 1)
        return ((elements.astype(np.int16) ^ sign) - sign).astype(np.int8)
    return elements.astype(np.uint8)


# name -> (type, dims, typed): odd counts, a padded last byte, 2-D tensors whose rows are whole
# bytes (shardable), and the typed form.
CASES = {"u4": ("UINT4", [3, 4], False), "i4_odd": ("INT4", [5], False),
         "i4_rows": ("INT4", [4, 6], False), "f4": ("FLOAT4E2M1", [2, 2], False),
         "u2": ("UINT2", [2, 6], False), "i2_odd": ("INT2", [7], False),
         "i4_typed": ("INT4", [3, 2], True), "u2_rows": ("UINT2", [8, 4], False)}


@pytest.fixture(scope="module")
def sub_byte_model(tmp_path_factory):
    """The model file and name -> expected array."""
    rng = np.random.default_rng(18)
    initializers, expected = b"", {}
    for name, (type_name, dims, typed) in CASES.items():
        data_type, bits, signed = TYPES[type_name]
        count = int(np.prod(dims))
        packed = rng.integers(0, 256, (count * bits + 7) // 8, dtype=np.uint8).tobytes()
        initializers += field(5, tensor_proto(name, data_type, dims, packed, typed))
        expected[name] = unpack(packed, bits, signed, count).reshape(dims)
    graph = field(2, b"sub_byte") + initializers
    model = field(1, 10) + field(8, field(1, b"") + field(2, 21)) + field(7, graph)
    path = tmp_path_factory.mktemp("sub_byte") / "sub_byte.onnx"
    path.write_bytes(model)
    return path, expected


def test_numpy_unpacks_one_element_per_byte(sub_byte_model):
    path, expected = sub_byte_model
    with onnxmap.open(path) as model:
        for name, want in expected.items():
            tensor = model[name]
            assert tensor.data_type == CASES[name][0] and not tensor.is_view
            got = tensor.numpy()
            assert got.dtype == want.dtype and got.shape == want.shape, name
            assert np.array_equal(got, want), name
            assert not got.flags.writeable


def test_numpy_helper_agrees_where_onnx_reads_the_types(sub_byte_model):
    """numpy_helper judges too where the installed onnx has these types (its ml_dtypes arrays
    converted to one element a byte): not onnx 1.12, but PyPI's onnx of the python-pypi run."""
    path, expected = sub_byte_model
    reference = onnx.load(str(path))
    judged = 0
    with onnxmap.open(path) as model:
        for proto in reference.graph.initializer:
            want = judge_array(proto)
            if want is None:
                continue
            assert_same_array(model[proto.name].numpy(), want, proto.name)
            assert np.array_equal(want, expected[proto.name]), proto.name
            judged += 1
    if hasattr(onnx.TensorProto, "INT2"):  # the newest of the five: onnx reads them all
        assert judged == len(CASES)


def test_slice_rows_of_sub_byte(sub_byte_model):
    path, expected = sub_byte_model
    with onnxmap.open(path) as model:
        for name in ("i4_rows", "u2_rows", "u4"):
            rows = expected[name].shape[0]
            for begin, end in ((0, rows), (1, rows - 1), (rows - 1, rows)):
                got = model[name].slice_rows(begin, end)
                assert np.array_equal(got, expected[name][begin:end]), (name, begin, end)


@pytest.mark.parametrize("mode", ["read", "direct", "map"])
def test_load_unpacks_in_every_mode(sub_byte_model, mode):
    path, expected = sub_byte_model
    with onnxmap.open(path) as model:
        got = {}
        model.load(got.__setitem__, mode=mode)
        assert sorted(got) == sorted(expected)
        for name, want in expected.items():
            assert got[name].dtype == want.dtype and np.array_equal(got[name], want), name
        for ranks in (2, 3):
            shards = []
            for rank in range(ranks):
                shard = {}
                model.load(shard.__setitem__, mode=mode, shard=(rank, ranks),
                           filter="*_rows")
                shards.append(shard)
            for name in ("i4_rows", "u2_rows"):
                parts = [s[name] for s in shards]
                assert all(p.shape[0] < expected[name].shape[0] for p in parts)
                assert np.array_equal(np.concatenate(parts), expected[name]), (name, ranks)


@pytest.mark.skipif(not ONNXMAP_EXE, reason="ONNXMAP_EXE is not set (meson test sets it)")
def test_cli_get_writes_the_same_elements(sub_byte_model, tmp_path):
    path, expected = sub_byte_model
    for name, want in expected.items():
        out = tmp_path / f"{name}.npy"
        subprocess.run([ONNXMAP_EXE, "get", str(path), name, "-o", str(out)], check=True)
        got = np.load(out)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
