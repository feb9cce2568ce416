"""Every tensor equals onnx.numpy_helper.to_array, on the fixtures and the backend corpus; views
are zero-copy and read-only, copies say so."""
import ctypes
import os
import pathlib
import shutil

import numpy as np
import onnx
import pytest

import onnxmap
from conftest import FIXTURE_MODELS, assert_same_array, corpus_params, judge_array


def initializers_equal(path):
    """Compares every main-graph initializer of `path`; returns how many were judged."""
    reference = onnx.load(str(path))
    judged = 0
    with onnxmap.open(path) as model:
        ours = model.graph.initializers
        assert [t.name for t in ours] == [t.name for t in reference.graph.initializer]
        for mine, theirs in zip(ours, reference.graph.initializer):
            assert mine.data_type == onnx.TensorProto.DataType.Name(theirs.data_type)
            assert mine.shape == tuple(theirs.dims)
            expected = judge_array(theirs, str(pathlib.Path(path).parent))
            if expected is None:
                continue
            assert_same_array(mine.numpy(), expected, f"{path}: {mine.path}")
            judged += 1
    return judged


@pytest.mark.parametrize("name", FIXTURE_MODELS)
def test_fixture_tensors_equal_onnx(fixtures, name):
    assert initializers_equal(fixtures / name) > 0


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_tensors_equal_onnx(path):
    initializers_equal(path)


def test_every_dtype_round_trip(fixtures):
    with onnxmap.open(fixtures / "all_dtypes.onnx") as model:
        raw = [model[k] for k in model.keys() if k.startswith("raw_")]
        assert len(raw) == 14
        for tensor in raw:
            array = tensor.numpy()
            assert tensor.is_view and tensor.storage == "raw"
            assert not array.flags.writeable
            assert array.nbytes == tensor.nbytes
            typed = model["typed_" + tensor.name[4:]]
            assert typed.storage == "typed" and not typed.is_view
            assert typed.numpy().tobytes() == array.tobytes()


def test_zero_copy_points_into_the_map(fixtures):
    with onnxmap.open(fixtures / "all_dtypes.onnx") as model:
        first = model["raw_float"].numpy()
        second = model["raw_float"].numpy()
        assert first.ctypes.data == second.ctypes.data  # the same mapped bytes, not copies
        with pytest.raises(ValueError):
            first[0, 0] = 1.0


def test_read_mode_equals_map_mode(fixtures):
    path = fixtures / "all_dtypes.onnx"
    with onnxmap.open(path) as mapped, onnxmap.open(path, mode="read") as read:
        for name in mapped.keys():
            assert_same_array(read[name].numpy(), mapped[name].numpy(), name)


def test_slice_rows_is_a_view_of_the_rows(fixtures):
    with onnxmap.open(fixtures / "external_one_file.onnx") as model:
        tensor = model["w1"]
        whole = tensor.numpy()
        rows = tensor.slice_rows(10, 20)
        assert tensor.storage == "external"
        assert rows.shape == (10, 32) and np.array_equal(rows, whole[10:20])
        assert rows.ctypes.data == whole.ctypes.data + 10 * 32 * 4
        with pytest.raises(onnxmap.Error):
            tensor.slice_rows(20, 65)


def test_mapping_protocol(fixtures):
    with onnxmap.open(fixtures / "all_dtypes.onnx") as model:
        names = model.keys()
        assert len(model) == len(names) == len(set(names))
        assert list(model) == names
        assert "raw_float" in model and "nope" not in model
        with pytest.raises(KeyError):
            model["nope"]
        with pytest.raises(onnxmap.Error) as raised:
            model.tensor("nope")
        assert raised.value.kind == "not_found"


def resident_pages(array):
    """(resident, total) pages under a zero-copy array, by mincore(2)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    page = os.sysconf("SC_PAGE_SIZE")
    begin = array.ctypes.data // page * page
    length = array.ctypes.data + array.nbytes - begin
    flags = (ctypes.c_ubyte * ((length + page - 1) // page))()
    assert libc.mincore(begin, length, flags) == 0, os.strerror(ctypes.get_errno())
    return sum(f & 1 for f in flags), len(flags)


def evicted_copy(source, folder):
    """`source` and its data files copied into `folder`, flushed and dropped from the page cache."""
    for path in source.parent.iterdir():
        if path.name.startswith(source.stem):
            target = folder / path.name
            shutil.copyfile(path, target)
            fd = os.open(target, os.O_RDONLY)
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
    return folder / source.name


def test_prefetch_makes_payloads_resident(fixtures, tmp_path):
    path = evicted_copy(fixtures / "external_one_file.onnx", tmp_path)
    with onnxmap.open(path) as model:
        arrays = [model[name].numpy() for name in model.keys()]
        before = sum(resident_pages(a)[0] for a in arrays)
        total = sum(resident_pages(a)[1] for a in arrays)
        if before > total // 2:
            pytest.skip(f"the kernel kept {before} of {total} pages cached after DONTNEED")
        model.prefetch()
        for name, array in zip(model.keys(), arrays):
            resident, pages = resident_pages(array)
            assert resident == pages, f"{name}: {resident} of {pages} pages after prefetch"


def test_bulk_read(fixtures):
    with onnxmap.open(fixtures / "external_one_file.onnx") as model:
        copies = model.read(threads=2)
        assert sorted(copies) == sorted(model.keys())
        for name, array in copies.items():
            assert array.flags.writeable and np.array_equal(array, model[name].numpy())


def test_numpy_protocol(fixtures):
    with onnxmap.open(fixtures / "all_dtypes.onnx") as model:
        tensor = model["raw_float16"]
        assert np.asarray(tensor).dtype == np.float16
        assert np.array_equal(np.asarray(tensor, dtype=np.float32), tensor.numpy().astype(np.float32))


def test_stats_equal_numpy(tmp_path):
    # Tensor.stats() is onnxmap stats' counting (tests/cli/stats_test.py checks every type): here
    # a float16, a typed float32, an all-NaN and a BOOL tensor against numpy, and the refusals.
    rng = np.random.default_rng(11)
    special = [0.0, -0.0, np.nan, np.inf, -np.inf]
    arrays = {"h": np.concatenate([rng.standard_normal(50000), special]).astype(np.float16),
              "nan": np.full(3, np.nan, np.float32), "b": rng.integers(0, 2, 99).astype(bool)}
    tensors = [onnx.numpy_helper.from_array(a, n) for n, a in arrays.items()]
    tensors.append(onnx.helper.make_tensor("typed", onnx.TensorProto.FLOAT, [3], [2.0, -1.0, 0.5]))
    arrays["typed"] = np.array([2.0, -1.0, 0.5])
    tensors.append(onnx.helper.make_tensor("s", onnx.TensorProto.STRING, [1], [b"x"]))
    path = tmp_path / "m.onnx"
    onnx.save(onnx.helper.make_model(onnx.helper.make_graph([], "g", [], [], tensors)), str(path))
    with onnxmap.open(path) as model:
        for name, array in arrays.items():
            values = array.astype(np.float64).reshape(-1)
            finite = values[np.isfinite(values)]
            s = model[name].stats(bins=8)
            assert (s["count"], s["nans"], s["infinities"], s["zeros"]) == (
                values.size, np.isnan(values).sum(), np.isinf(values).sum(), (finite == 0).sum())
            if finite.size == 0:
                assert s["min"] is None and s["mean"] is None and sum(s["histogram"]) == 0
                continue
            assert s["min"] == finite.min() and s["max"] == finite.max()
            assert s["mean"] == pytest.approx(finite.mean(), rel=1e-9, abs=1e-12)
            assert s["std"] == pytest.approx(finite.std(), rel=1e-9, abs=1e-12)
            histogram, _ = np.histogram(finite, bins=8)
            assert sum(s["histogram"]) == finite.size
            assert np.abs(np.array(s["histogram"]) - histogram).sum() <= 2
        with pytest.raises(onnxmap.Error, match="no statistics for STRING"):
            model["s"].stats()
        with pytest.raises(onnxmap.Error):
            model["h"].stats(bins=0)
