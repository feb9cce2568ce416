"""A model's data file halved after open: Model.read, Tensor.stats(), Model.load and
Model.load_to_torch raise onnxmap.Error (kind "io", naming the file and saying that it shrank)
where they died of SIGBUS; the bytes still there still read."""
import os

import numpy as np
import pytest
from onnx import helper, numpy_helper, save_model

import onnxmap

FLOATS = 1 << 18  # 1 MiB a tensor


@pytest.fixture
def halved(tmp_path):
    """(model opened before its data file was halved, its first tensor's values)."""
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(FLOATS, dtype=np.float32) for _ in range(4)]
    tensors = [numpy_helper.from_array(a, f"t{i}") for i, a in enumerate(arrays)]
    path = tmp_path / "m.onnx"
    save_model(helper.make_model(helper.make_graph([], "g", [], [], initializer=tensors)),
               str(path), save_as_external_data=True, all_tensors_to_one_file=True,
               location="m.onnx.data", size_threshold=0)
    model = onnxmap.open(path)
    data = tmp_path / "m.onnx.data"
    os.truncate(data, data.stat().st_size // 2)
    yield model, arrays[0]
    model.close()


def expect_shrank(call):
    with pytest.raises(onnxmap.Error) as error:
        call()
    assert error.value.kind == "io", error.value
    assert "m.onnx.data" in str(error.value) and "shrink" in str(error.value), error.value


def test_read_raises(halved):
    model, _ = halved
    expect_shrank(lambda: model.read(["t3"]))
    expect_shrank(lambda: model.read())


def test_stats_raise(halved):
    model, first = halved
    expect_shrank(lambda: model["t3"].stats())
    assert model["t0"].stats()["count"] == FLOATS
    assert model["t0"].stats()["max"] == pytest.approx(float(first.max()))


@pytest.mark.parametrize("mode", ["read", "direct", "map"])
def test_load_raises(halved, mode):
    model, first = halved
    expect_shrank(lambda: model.load(lambda name, array: np.asarray(array).sum(), mode=mode))
    got = {}
    model.load(lambda name, array: got.setdefault(name, np.array(array)), names=["t0"], mode=mode)
    np.testing.assert_array_equal(got["t0"], first)


@pytest.mark.parametrize("mode", ["map", "read", "direct"])
def test_load_to_torch_raises(halved, mode):
    torch = pytest.importorskip("torch")
    model, first = halved
    # device="cpu": the device pipeline into host memory; in map mode from the registered map.
    expect_shrank(lambda: model.load_to_torch("cpu", names=["t3"], mode=mode))
    got = model.load_to_torch("cpu", names=["t0"], mode=mode)["t0"]
    assert torch.equal(got, torch.from_numpy(first))
