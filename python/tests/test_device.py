"""Model.load_to_torch and safe_open(device=...): the library's load_to_device into tensors
torch allocated. device="cpu" runs the whole pipeline (plan, ring, registered path, workers)
through the host engine, so every case here runs on machines without a GPU; each tensor is
judged by python3-onnx's bytes."""
import subprocess

import onnx
import pytest

import onnxmap
from conftest import ONNXMAP_EXE, judge_array
from test_load import reference_tensor

torch = pytest.importorskip("torch")

FIXTURES = ["all_dtypes.onnx", "features.onnx", "external_one_file.onnx",
            "per_tensor/external_per_tensor.onnx"]


def loadable(model):
    """The names of keys() whose type torch holds here."""
    names = []
    for name in model.keys():
        try:
            onnxmap.device.torch_dtype(torch, model[name].data_type, name)
        except TypeError:
            continue
        names.append(name)
    return names


def tensor_bytes(tensor):
    """A CPU tensor's bytes (bfloat16 through its bit patterns: NumPy has no bfloat16)."""
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.view(torch.int16)
    return tensor.contiguous().numpy().tobytes()


def expected_array(proto, model, name, folder):
    """onnx's array of the tensor (onnxmap's own where onnx 1.12 cannot read it)."""
    judged = judge_array(reference_tensor(proto, model[name].path), folder)
    return model[name].numpy() if judged is None else judged


def assert_loaded_equal(path, tensors, model):
    proto = onnx.load(str(path))
    folder = str(path.parent)
    for name, tensor in tensors.items():
        expected = expected_array(proto, model, name, folder)
        assert tensor.device.type == "cpu", name
        assert tuple(tensor.shape) == expected.shape, name
        assert tensor_bytes(tensor) == expected.tobytes(), name


@pytest.mark.parametrize("fixture", FIXTURES)
@pytest.mark.parametrize("mode", ["direct", "read", "map"])
def test_every_tensor_equals_onnx(fixtures, fixture, mode):
    path = fixtures / fixture
    with onnxmap.open(path) as model:
        names = loadable(model)
        stats = {}
        tensors = model.load_to_torch("cpu", names=names, mode=mode, stats=stats)
        assert list(tensors) == names
        assert_loaded_equal(path, tensors, model)
        assert stats["tensors"] == len(names)
        assert stats["bytes"] == sum(t.numel() * t.element_size() for t in tensors.values())
        assert stats["path"] in ("registered", "pinned", "registered+pinned", "none")


@pytest.mark.parametrize("path_taken", ["pinned", "registered"])
@pytest.mark.parametrize("open_mode", ["map", "read"])
def test_forced_paths_and_held_models(fixtures, path_taken, open_mode):
    path = fixtures / "external_one_file.onnx"
    with onnxmap.open(path, mode=open_mode) as model:
        tensors = model.load_to_torch("cpu", names=loadable(model), path=path_taken, threads=2,
                                      max_in_flight_bytes=1 << 16)
        assert_loaded_equal(path, tensors, model)


@pytest.fixture(scope="module")
def synth_bf16(tmp_path_factory):
    """An LLM-shaped bfloat16 model with external data, written by `onnxmap synth`."""
    if not ONNXMAP_EXE:
        pytest.skip("ONNXMAP_EXE is not set")
    path = tmp_path_factory.mktemp("device") / "llm.onnx"
    subprocess.run([ONNXMAP_EXE, "synth", str(path), "--layers", "2", "--hidden", "64",
                    "--dtype", "bfloat16", "--external-data"], check=True, capture_output=True)
    return path


def test_bfloat16_external(synth_bf16):
    with onnxmap.open(synth_bf16) as model:
        tensors = model.load_to_torch("cpu")
        assert list(tensors) == model.keys()
        assert any(t.dtype == torch.bfloat16 for t in tensors.values())
        assert_loaded_equal(synth_bf16, tensors, model)


@pytest.mark.parametrize("ranks", [2, 3])
def test_shards_gather_to_the_whole(synth_bf16, ranks):
    with onnxmap.open(synth_bf16) as model:
        whole = model.load_to_torch("cpu")
        shards = [model.load_to_torch("cpu", rank=r, ranks=ranks) for r in range(ranks)]
        for name, full in whole.items():
            parts = [shard[name] for shard in shards]
            if all(p.shape == full.shape for p in parts):  # not cut: whole on every rank
                assert all(tensor_bytes(p) == tensor_bytes(full) for p in parts), name
                continue
            assert tensor_bytes(torch.cat(parts)) == tensor_bytes(full), name
            assert any(p.shape[0] < full.shape[0] for p in parts), name
        # rows as Model.load(shard=...) cuts them
        arrays = {}
        model.load(lambda n, a: arrays.__setitem__(n, a), shard=(1, ranks))
        for name, array in arrays.items():
            assert tuple(shards[1][name].shape) == array.shape, name
            assert tensor_bytes(shards[1][name]) == array.tobytes(), name


def test_names_filter_and_order(synth_bf16):
    with onnxmap.open(synth_bf16) as model:
        picked = [model.keys()[3], model.keys()[0]]
        assert list(model.load_to_torch("cpu", names=picked)) == picked
        matching = model.load_to_torch("cpu", filter="*.mlp.*")
        assert matching and all(".mlp." in n for n in matching)
        assert list(matching) == [n for n in model.keys() if ".mlp." in n]
        with pytest.raises(onnxmap.Error):
            model.load_to_torch("cpu", names=["no such tensor"])
        with pytest.raises(TypeError):
            model.load_to_torch("cpu", rank=0)
        with pytest.raises(onnxmap.Error, match='load mode must be .* not "mmap"'):
            model.load_to_torch("cpu", mode="mmap")


def test_progress_and_its_exception(synth_bf16):
    with onnxmap.open(synth_bf16) as model:
        seen = []
        model.load_to_torch("cpu", progress=lambda done, total: seen.append((done, total)))
        assert seen and seen[-1][0] == seen[-1][1] > 0

        def stop(done, total):
            raise KeyError("stop here")

        with pytest.raises(KeyError, match="stop here"):
            model.load_to_torch("cpu", progress=stop)


def test_types_torch_cannot_hold_are_named(fixtures):
    with onnxmap.open(fixtures / "all_dtypes.onnx") as model:
        refused = [n for n in model.keys() if n not in loadable(model)]
        assert refused
        for name in refused:
            with pytest.raises(TypeError, match=repr(name)):
                model.load_to_torch("cpu", names=[name])


@pytest.mark.parametrize("device", ["tpu", "cuda:x", "cuda:-1", "host"])
def test_unknown_device(synth_bf16, device):
    with onnxmap.open(synth_bf16) as model:
        with pytest.raises(onnxmap.Error) as raised:
            model.load_to_torch(device)
        assert raised.value.kind == "invalid_argument"
        assert device in str(raised.value)


no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")


@no_gpu
@pytest.mark.parametrize("device", ["cuda:0", "cuda", "cuda:7"])
def test_cuda_without_a_gpu_is_a_device_error(synth_bf16, device):
    """No driver here (torch's bundled runtime may still be found): onnxmap's device error,
    raised before torch is asked for anything, never torch's own."""
    with onnxmap.open(synth_bf16) as model:
        with pytest.raises(onnxmap.Error) as raised:
            model.load_to_torch(device)
        assert raised.value.kind == "device"
        assert "cuda" in str(raised.value).lower()


def test_safe_open_cpu_unchanged(synth_bf16):
    with onnxmap.safe_open(synth_bf16, framework="pt") as f, onnxmap.open(synth_bf16) as model:
        name = model.keys()[1]
        tensor = f.get_tensor(name)
        assert tensor_bytes(tensor) == model[name].numpy().tobytes()


@no_gpu
def test_safe_open_cuda_goes_through_onnxmap(synth_bf16):
    with onnxmap.safe_open(synth_bf16, framework="pt", device="cuda:0") as f:
        with pytest.raises(onnxmap.Error) as raised:
            f.get_tensor(f.keys()[0])
        assert raised.value.kind == "device"


def test_load_to_torch_on_the_stub():
    assert "load_to_torch" in dir(onnxmap.Model)
