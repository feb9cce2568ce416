"""What `onnxmap synth` writes, judged by onnx: its full check (types and shapes inferred through
every node) accepts each dtype the command offers, inline and with external data, with
grouped-query attention too; the logits' declared type is what inference finds; --finite gives
finite weights in the documented range where the pattern alone gives NaNs. ONNX Runtime running
them is test_ort.py's."""
import subprocess

import numpy as np
import onnx
import pytest

import onnxmap
from conftest import ONNXMAP_EXE

# The IR version each dtype's model declares (lib/write/synth.cpp's versions_for).
IR_OF = {"float16": 8, "bfloat16": 8, "float32": 8, "int4": 10}
LOGITS = {"float16": onnx.TensorProto.FLOAT16, "bfloat16": onnx.TensorProto.BFLOAT16,
          "float32": onnx.TensorProto.FLOAT, "int4": onnx.TensorProto.FLOAT}


def synth(path, *args):
    subprocess.run([ONNXMAP_EXE, "synth", str(path), *map(str, args)], check=True,
                   capture_output=True)
    return path


@pytest.mark.parametrize("external", [False, True], ids=["inline", "external"])
@pytest.mark.parametrize("dtype", sorted(IR_OF))
def test_full_check_accepts_what_synth_writes(tmp_path, dtype, external):
    if onnx.IR_VERSION < IR_OF[dtype]:
        pytest.skip(f"onnx {onnx.__version__} reads IR {onnx.IR_VERSION}, {dtype}'s model is "
                    f"IR {IR_OF[dtype]} (the PyPI run checks it)")
    path = synth(tmp_path / "m.onnx", "--layers", 2, "--hidden", 64, "--dtype", dtype,
                 *(["--external-data"] if external else []))
    onnx.checker.check_model(str(path), full_check=True)
    inferred = onnx.shape_inference.infer_shapes_path(str(path), str(tmp_path / "inferred.onnx"))
    assert inferred is None  # writes the file
    model = onnx.load(str(tmp_path / "inferred.onnx"), load_external_data=False)
    logits = model.graph.output[0].type.tensor_type
    assert logits.elem_type == LOGITS[dtype]
    assert [d.dim_param or d.dim_value for d in logits.shape.dim] == ["sequence", 1000]


def test_grouped_query_attention_checks(tmp_path):
    """From hidden 1024 the keys and values are hidden/8 wide (repeated to the query's width)."""
    path = synth(tmp_path / "gqa.onnx", "--layers", 1, "--hidden", 1024, "--vocab", 16,
                 "--dtype", "float32")
    onnx.checker.check_model(str(path), full_check=True)
    with onnxmap.open(path) as model:
        assert model["model.layers.0.self_attn.k_proj.weight"].shape == (128, 1024)
        concats = [n for n in model.graph.nodes if n.op_type == "Concat"]
        assert len(concats) == 2 and len(concats[0].inputs) == 8


def test_kv_width_that_does_not_divide_is_refused(tmp_path):
    r = subprocess.run([ONNXMAP_EXE, "synth", str(tmp_path / "m.onnx"), "--layers", "1",
                        "--hidden", "64", "--kv-dim", "48"], capture_output=True, text=True)
    assert r.returncode != 0
    assert "key/value width must divide the hidden size" in r.stderr, r.stderr


@pytest.mark.parametrize("dtype,low,high", [("float32", 2.0 ** -5, 2.0 ** -3),
                                             ("float16", 2.0 ** -4, 2.0 ** -3)])
def test_finite_weights_lie_in_the_documented_range(tmp_path, dtype, low, high):
    plain = synth(tmp_path / "plain.onnx", "--layers", 1, "--hidden", 64, "--dtype", dtype)
    finite = synth(tmp_path / "finite.onnx", "--layers", 1, "--hidden", 64, "--dtype", dtype,
                   "--finite")
    with onnxmap.open(plain) as p, onnxmap.open(finite) as f:
        pattern = np.concatenate([p[n].numpy().ravel() for n in p])
        values = np.concatenate([f[n].numpy().ravel() for n in f])
    assert not np.isfinite(pattern).all()  # why --finite exists
    magnitude = np.abs(values.astype(np.float64))
    assert np.isfinite(values).all() and magnitude.min() >= low and magnitude.max() < high
    assert (values < 0).any() and (values > 0).any()


def test_finite_bfloat16_has_no_nan_or_infinity(tmp_path):
    path = synth(tmp_path / "m.onnx", "--layers", 1, "--hidden", 64, "--dtype", "bfloat16",
                 "--finite")
    with onnxmap.open(path) as model:
        bits = np.concatenate([model[n].numpy().ravel() for n in model])  # uint16 bit patterns
    assert ((bits >> 7) & 0xFF).max() < 0xFF
