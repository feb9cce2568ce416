"""Arrays, Tensors and views keep the model's mapping alive: after close(), del or leaving the
with block every one of them still reads the right bytes."""
import gc

import numpy as np
import onnx

import onnxmap
from conftest import judge_array


def every_array(model):
    return {name: model[name].numpy() for name in model.keys()}


def expected_arrays(path):
    reference = onnx.load(str(path))
    out = {}
    for t in reference.graph.initializer:
        expected = judge_array(t, str(path.parent))
        if expected is not None:
            out[t.name] = expected
    return out


def assert_all_equal(arrays, expected):
    for name, want in expected.items():
        assert arrays[name].tobytes() == want.tobytes(), name


def test_arrays_outlive_close(fixtures):
    for name in ("all_dtypes.onnx", "external_one_file.onnx"):
        path = fixtures / name
        model = onnxmap.open(path)
        arrays = every_array(model)
        tensors = [model[n] for n in model.keys()]
        model.close()
        assert model.closed
        gc.collect()
        assert_all_equal(arrays, expected_arrays(path))
        assert all(t.numpy().shape == t.shape for t in tensors)


def test_arrays_outlive_del_and_with(fixtures):
    path = fixtures / "per_tensor" / "external_per_tensor.onnx"
    with onnxmap.open(path) as model:
        arrays = every_array(model)
        graph = model.graph
    del model
    gc.collect()
    assert_all_equal(arrays, expected_arrays(path))
    assert [t.name for t in graph.initializers] == ["w0", "w1", "w2"]  # views stay usable too


def test_slices_and_sums_after_close(fixtures):
    path = fixtures / "external_one_file.onnx"
    model = onnxmap.open(path)
    rows = model["w2"].slice_rows(3, 9)
    total = float(model["w2"].numpy().sum())
    model.close()
    del model
    gc.collect()
    assert rows.shape == (6, 32)
    assert np.isclose(float(onnxmap.open(path)["w2"].numpy().sum()), total)
    assert np.array_equal(rows, expected_arrays(path)["w2"][3:9])


def test_closed_model_raises(fixtures):
    model = onnxmap.open(fixtures / "all_dtypes.onnx")
    model.close()
    for use in (lambda: model.keys(), lambda: model["raw_float"], lambda: model.graph):
        try:
            use()
        except onnxmap.Error as error:
            assert error.kind == "invalid_argument" and "closed" in str(error)
        else:
            raise AssertionError("a closed model answered")
