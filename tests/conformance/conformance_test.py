"""The reference implementation as judge: `onnxmap dump FILE` must equal
google.protobuf.json_format.MessageToDict of the same file, field for field; `onnxmap ls` must
list the main graph's initializers with their names, types and dims; and `onnxmap get` of the
first initializers must equal onnx.numpy_helper.to_array, byte for byte. Over every .onnx and
.pb of the corpus (the cases marked `corpus`) and of tests/conformance/make_fixtures.py.

Float fields compare as float32 (onnxmap prints the shortest float32 decimal, protobuf may print
another decimal of the same float32); everything else compares exactly.
"""
import json
import math
import tempfile
import warnings

import numpy as np
import onnx
import pytest
from google.protobuf import json_format
from onnx import numpy_helper

DATA_KEYS = {"rawData", "floatData", "int32Data", "stringData", "int64Data", "doubleData",
             "uint64Data"}


def same_number(a, b):
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if a == b:
        return True
    fa, fb = np.float32(a), np.float32(b)
    return fa == fb or (math.isnan(fa) and math.isnan(fb))


def differences(expected, got, path="", out=None):
    """Paths where `got` differs from `expected`, at most 20."""
    out = [] if out is None else out
    if len(out) >= 20:
        return out
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in sorted(set(expected) | set(got)):
            if key not in got:
                out.append(f"{path}.{key}: missing")
            elif key not in expected:
                out.append(f"{path}.{key}: unexpected {str(got[key])[:60]}")
            else:
                differences(expected[key], got[key], f"{path}.{key}", out)
    elif isinstance(expected, list) and isinstance(got, list):
        if len(expected) != len(got):
            out.append(f"{path}: {len(expected)} elements expected, got {len(got)}")
        for i, (e, g) in enumerate(zip(expected, got)):
            differences(e, g, f"{path}[{i}]", out)
    elif isinstance(expected, (int, float)) and isinstance(got, (int, float)) and \
            not isinstance(expected, bool):
        if not same_number(expected, got):
            out.append(f"{path}: expected {expected}, got {got}")
    elif expected != got:
        out.append(f"{path}: expected {str(expected)[:60]}, got {str(got)[:60]}")
    return out


def without_data(value):
    if isinstance(value, dict):
        return {k: without_data(v) for k, v in value.items() if k not in DATA_KEYS}
    if isinstance(value, list):
        return [without_data(v) for v in value]
    return value


def tensor_problems(onnxmap, path, model, get_limit, unjudged):
    """Differences between `ls`/`get` and python3-onnx for the main graph's initializers; the
    tensors python3-onnx itself cannot read go to `unjudged`."""
    run = onnxmap("ls", "--json", path)
    if run.returncode != 0:
        return [f"ls exit {run.returncode}: {run.stderr.decode().strip()}"]
    rows = {r["path"]: r for r in json.loads(run.stdout)}
    problems = []
    with_data = None
    for i, tensor in enumerate(model.graph.initializer):
        row = rows.get(f"graph.initializer[{i}]")
        if row is None:
            problems.append(f"ls: graph.initializer[{i}] missing")
            continue
        if (row["name"], row["dtype"], row["dims"]) != (
                tensor.name, onnx.TensorProto.DataType.Name(tensor.data_type), list(tensor.dims)):
            problems.append(f"ls: graph.initializer[{i}] is {row}, expected {tensor.name}")
        numeric = tensor.data_type not in (onnx.TensorProto.STRING, onnx.TensorProto.BFLOAT16)
        # numpy_helper refuses segmented tensors; onnxmap serves their bytes as they are.
        if i >= get_limit or not numeric or tensor.HasField("segment"):
            continue
        if with_data is None:  # external data read only for the payloads compared
            with_data = onnx.load(str(path), load_external_data=False)
        try:
            expected = numpy_helper.to_array(with_data.graph.initializer[i],
                                             base_dir=str(path.parent))
        except (TypeError, ValueError):
            # onnx 1.12 cannot read some tensors (typed COMPLEX): no judge for those.
            unjudged.append(f"graph.initializer[{i}] ({tensor.name})")
            continue
        # Each load mode in turn, so every mode is judged on the whole corpus at no extra cost.
        mode = ("map", "read", "direct")[i % 3]
        with tempfile.NamedTemporaryFile(suffix=".npy") as out:
            run = onnxmap("get", path, f"graph.initializer[{i}]", "-o", out.name, "--load-mode",
                          mode)
            got = np.load(out.name) if run.returncode == 0 else None
        if got is None or got.dtype != expected.dtype or got.shape != expected.shape or \
                got.tobytes() != expected.tobytes():
            problems.append(f"get --load-mode {mode} graph.initializer[{i}] differs from "
                            "numpy_helper.to_array")
    return problems


def message_of(path):
    """(message class name, parsed message) for a file; skips one that is not a TensorProto."""
    data = path.read_bytes()
    if path.suffix == ".onnx":
        return "ModelProto", onnx.load_model_from_string(data)
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    # The backend tests store sequences, maps and optionals as messages of onnx-data.proto,
    # which onnxmap does not read; a TensorProto parse of those has no data_type.
    if tensor.data_type == 0:
        pytest.skip("not a TensorProto (a sequence, map or optional of onnx-data.proto), which "
                    "onnxmap does not read")
    return "TensorProto", tensor


def assert_conforms(onnxmap, path, get_limit):
    kind, message = message_of(path)
    expected = json_format.MessageToDict(message)
    problems = []
    for omit in (False, True):
        args = ["dump", "--message", kind, path] + (["--omit-data"] if omit else [])
        run = onnxmap(*args)
        if run.returncode != 0:
            problems.append(f"exit {run.returncode}: {run.stderr.decode().strip()}")
            break
        want = without_data(expected) if omit else expected
        problems += differences(want, json.loads(run.stdout), "omit-data" if omit else "")
    if kind == "ModelProto" and not problems:
        unjudged = []
        problems += tensor_problems(onnxmap, path, message, get_limit, unjudged)
        if unjudged:
            warnings.warn(f"python3-onnx cannot read {', '.join(unjudged)} of {path}: their "
                          "bytes were not compared")
    assert not problems, "\n".join(problems[:20])


def test_fixture(onnxmap, fixture_file):
    """Every fixture tensor is compared (they cover every dtype)."""
    assert_conforms(onnxmap, fixture_file, 1000)


def test_corpus(onnxmap, corpus_file):
    """A sample of each corpus model's tensors is compared: its first three."""
    assert_conforms(onnxmap, corpus_file, 3)
