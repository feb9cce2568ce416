"""Every strategy on a multi-GB model, judged by onnx.numpy_helper.to_array: a model whose
weights live in a 2.3 GB external data file, and the same weights inlined in one 2.3 GB .onnx
file. 1.2 GB of tensors (up to 286 MB each) at offsets that cross 2 GiB and are odd where the type
allows; the files are sparse (free on disk) but every tensor has real random bytes at its start, its end, a few interior places and
around the rows of shard 3 of 8, and the gaps between external payloads are real bytes too, so a
read from the wrong offset cannot come back as matching zeros.

Memory stays near one copy of the model (the "read" open): the judge's arrays are kept as their
non-zero extents, after checking that they are zero everywhere else, and each array onnxmap
gives is compared on those extents and counted zero outside them (exact equality)."""
import os

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import onnxmap
from conftest import once

# Past 2 GiB the paths are the other load tests', at larger offsets: judged once (conftest).
pytestmark = once

# name, type, shape, where its payload starts in the data file: an int is a fixed offset, a
# string "+N" is N bytes after the previous payload's end, "page" the next 4096-aligned offset.
LAYOUT = [
    ("w0", onnx.TensorProto.FLOAT, (8192, 8192), 0),
    ("w1", onnx.TensorProto.INT8, (300_000_001,), "+3"),
    ("w2", onnx.TensorProto.FLOAT16, (8193, 16384), "page"),
    ("w3", onnx.TensorProto.DOUBLE, (32769, 1023), (1 << 31) - (128 << 20) + 12),  # across 2 GiB
    ("w4", onnx.TensorProto.INT32, (5, 7, 11, 50_003), "+1"),
    ("w5", onnx.TensorProto.UINT16, (40000, 1001), "+5"),
    ("w6", onnx.TensorProto.FLOAT, (3, 5), "+1000"),
]
# The single file pushes its tensors past 2 GiB with a field of this many bytes before them (a
# hole that only the read and direct opens copy): 1.2 GB of tensors keep the test's time modest.
SPACER = 1 << 30
PATCH = 4099  # bytes of each real patch: not a multiple of any page or block
SHARD = (3, 8)
MODES = ["map", "read", "direct"]


def np_dtype(dtype):
    """NumPy's dtype of an ONNX type: onnx.mapping went in onnx 1.19, its helper came in 1.13."""
    if hasattr(helper, "tensor_dtype_to_np_dtype"):
        return np.dtype(helper.tensor_dtype_to_np_dtype(dtype))
    from onnx import mapping
    return np.dtype(mapping.TENSOR_TYPE_TO_NP_TYPE[dtype])


def nbytes(dtype, shape):
    return int(np.prod(shape)) * np_dtype(dtype).itemsize


def data_offsets():
    """name -> offset of its payload in the external data file, per LAYOUT."""
    offsets, end = {}, 0
    for name, dtype, shape, where in LAYOUT:
        if where == "page":
            at = (end + 4095) // 4096 * 4096
        elif isinstance(where, str):
            at = end + int(where[1:])
        else:
            at = where
        assert at >= end
        offsets[name] = at
        end = at + nbytes(dtype, shape)
    return offsets


def patch_starts(dtype, shape):
    """Where the real patches of a tensor start, relative to its first byte: both ends, a few
    interior places (one across a page boundary) and both sides of shard 3 of 8's rows."""
    size = nbytes(dtype, shape)
    row = size // shape[0]
    rank, ranks = SHARD
    starts = [0, size - PATCH, size // 3 + 1, size // 2 + 4095 - PATCH // 2, 2 * size // 3 - 7]
    for rows in (shape[0] * rank // ranks, shape[0] * (rank + 1) // ranks):
        starts.append(rows * row - PATCH // 2)
    return sorted({min(max(s, 0), max(size - PATCH, 0)) for s in starts})


def real_extents(dtype, shape):
    """The [begin, end) byte ranges of a tensor that its patches cover, overlaps merged."""
    size, merged = nbytes(dtype, shape), []
    for start in patch_starts(dtype, shape):
        end = min(start + PATCH, size)
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def write_patches(f, name, dtype, shape, base):
    """Writes the tensor's real patches, its payload starting at `base` in the open file `f`."""
    rng = np.random.default_rng(sum(map(ord, name)))
    size = nbytes(dtype, shape)
    for start in patch_starts(dtype, shape):
        f.seek(base + start)
        f.write(rng.integers(1, 256, min(PATCH, size), dtype=np.uint8).tobytes())


def make_external(folder):
    """big.onnx (a few hundred bytes) with every weight in big.data (2.2 GB, sparse)."""
    offsets = data_offsets()
    tensors = []
    with open(folder / "big.data", "wb") as f:
        previous_end = 0
        for name, dtype, shape, _ in LAYOUT:
            at = offsets[name]
            # Real bytes in the gap before this payload (at most a patch on each side).
            gap = at - previous_end
            f.seek(previous_end)
            f.write(b"\xa5" * min(gap, PATCH))
            f.seek(max(at - PATCH, previous_end))
            f.write(b"\x5a" * min(gap, PATCH))
            write_patches(f, name, dtype, shape, at)
            previous_end = at + nbytes(dtype, shape)
            t = onnx.TensorProto(name=name, data_type=dtype, dims=shape)
            t.data_location = onnx.TensorProto.EXTERNAL
            for key, value in (("location", "big.data"), ("offset", at),
                               ("length", nbytes(dtype, shape))):
                entry = t.external_data.add()
                entry.key, entry.value = key, str(value)
            tensors.append(t)
        f.write(b"\xc3" * PATCH)  # real bytes after the last payload too
    model = helper.make_model(helper.make_graph([], "big", [], [], initializer=tensors))
    onnx.save(model, str(folder / "big.onnx"))
    return folder / "big.onnx"


def varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def tag(message, field):
    """The length-delimited key of `field` of the protobuf `message` class."""
    return varint(message.DESCRIPTOR.fields_by_name[field].number << 3 | 2)


def make_single(folder):
    """single.onnx (2.3 GB, sparse): the same weights as raw_data inside the file, after a
    SPACER-byte unknown field. onnx cannot write a message over 2 GB, so the framing is written
    here; returns the path and each tensor's (start, length) of its TensorProto in the file, for
    the judge to parse alone."""
    model = helper.make_model(helper.make_graph([], "big", [], []))
    model.ClearField("graph")  # written below, by hand
    head = model.SerializeToString() + varint(1000 << 3 | 2) + varint(SPACER)
    headers, spans = [], {}
    for name, dtype, shape, _ in LAYOUT:
        t = onnx.TensorProto(name=name, data_type=dtype, dims=shape).SerializeToString()
        headers.append(t + tag(onnx.TensorProto, "raw_data") + varint(nbytes(dtype, shape)))
    graph_name = onnx.GraphProto(name="big").SerializeToString()
    graph_length = len(graph_name) + sum(
        len(tag(onnx.GraphProto, "initializer") + varint(len(h) + nbytes(d, s))) + len(h) +
        nbytes(d, s) for h, (_, d, s, _) in zip(headers, LAYOUT))
    path = folder / "single.onnx"
    with open(path, "wb") as f:
        f.write(head)
        f.seek(SPACER, os.SEEK_CUR)
        f.write(tag(onnx.ModelProto, "graph") + varint(graph_length) + graph_name)
        for header, (name, dtype, shape, _) in zip(headers, LAYOUT):
            length = len(header) + nbytes(dtype, shape)
            f.write(tag(onnx.GraphProto, "initializer") + varint(length))
            spans[name] = (f.tell(), length)
            f.write(header)
            write_patches(f, name, dtype, shape, f.tell())
            f.seek(spans[name][0] + length)
        f.truncate()
    assert path.stat().st_size > 2 << 30
    return path, spans


def byte_view(array):
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


class Judged:
    """numpy_helper's array of one tensor, kept as its bytes at the patches (zero elsewhere)."""

    def __init__(self, expected, dtype, shape):
        self.dtype, self.shape = expected.dtype, expected.shape
        assert self.shape == tuple(shape) and self.dtype == np_dtype(dtype)
        raw = byte_view(expected)
        self.extents = [(b, raw[b:e].copy()) for b, e in real_extents(dtype, shape)]
        # The judge's array is zero outside the patches: the patches are all of it.
        assert np.count_nonzero(raw) == sum(np.count_nonzero(b) for _, b in self.extents)
        assert all(np.count_nonzero(b) == len(b) for _, b in self.extents)

    def check(self, got, what, rows=None):
        """Asserts `got` equals the judge's array (its rows [begin, end) when given)."""
        shape = self.shape if rows is None else (rows[1] - rows[0],) + self.shape[1:]
        assert got.dtype == self.dtype and got.shape == shape, what
        raw = byte_view(got)
        first = 0 if rows is None else rows[0] * (int(np.prod(self.shape)) // self.shape[0]) \
            * self.dtype.itemsize
        inside = 0
        for start, expected in self.extents:
            lo, hi = max(start, first), min(start + len(expected), first + len(raw))
            if lo < hi:
                assert np.array_equal(raw[lo - first:hi - first], expected[lo - start:hi - start]), \
                    f"{what}: bytes [{lo}, {hi}) differ"
                inside += hi - lo
        assert np.count_nonzero(raw) == inside, f"{what}: non-zero bytes outside the patches"


def shard_rows(shape):
    rank, ranks = SHARD
    return shape[0] * rank // ranks, shape[0] * (rank + 1) // ranks


def loader_rows(shape, shard):
    """The rows the loader gives for `shard`: None (whole) without one or with fewer rows than
    ranks."""
    return shard_rows(shape) if shard and shape[0] >= shard[1] else None


def check_every_strategy(path, judged):
    """Every open mode's views (whole tensors and slice_rows of shard 3 of 8) and every mode of
    the streaming loader (whole and shard 3 of 8) against the judge."""
    for load in MODES:
        with onnxmap.open(path, mode=load) as model:
            assert sorted(model.keys()) == sorted(judged)
            assert any(model[n].file_offset < 1 << 31 < model[n].file_offset + model[n].nbytes
                       for n in judged)  # a payload across 2 GiB
            for name, judge in judged.items():
                judge.check(model[name].numpy(), f"{path.name} open {load}: {name}")
                rows = shard_rows(judge.shape)
                judge.check(model[name].slice_rows(*rows),
                            f"{path.name} open {load}: {name}.slice_rows{rows}", rows)
    with onnxmap.open(path) as model:
        for mode in MODES:
            for shard in (None, SHARD):
                seen = []

                def compare(name, array, mode=mode, shard=shard, seen=seen):
                    rows = loader_rows(judged[name].shape, shard)
                    judged[name].check(array, f"{path.name} load {mode} shard {shard}: {name}",
                                       rows)
                    seen.append(name)

                stats = model.load(compare, mode=mode, shard=shard, threads=2)
                assert sorted(seen) == sorted(judged) and stats["tensors"] == len(judged)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("big")
    yield path
    for file in path.iterdir():
        os.unlink(file)


def test_big_external_data_every_strategy(folder):
    path = make_external(folder)
    assert (folder / "big.data").stat().st_size > 2 << 30
    proto = onnx.load(str(path), load_external_data=False)
    judged = {}
    for tensor in proto.graph.initializer:
        name, dtype, shape = tensor.name, tensor.data_type, tuple(tensor.dims)
        copy = onnx.TensorProto()
        copy.CopyFrom(tensor)  # to_array loads the external bytes into the proto it is given
        judged[name] = Judged(numpy_helper.to_array(copy, base_dir=str(folder)), dtype, shape)
        del copy
    check_every_strategy(path, judged)


def test_big_single_file_every_strategy(folder):
    path, spans = make_single(folder)
    judged = {}
    with open(path, "rb") as f:
        for name, dtype, shape, _ in LAYOUT:
            start, length = spans[name]
            f.seek(start)
            tensor = onnx.TensorProto.FromString(f.read(length))
            assert tensor.name == name
            judged[name] = Judged(numpy_helper.to_array(tensor), dtype, shape)
            del tensor
    check_every_strategy(path, judged)
