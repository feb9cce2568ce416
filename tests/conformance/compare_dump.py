#!/usr/bin/python3
"""The reference implementation as judge: `onnxmap dump FILE` must equal
google.protobuf.json_format.MessageToDict of the same file, field for field; `onnxmap ls` must
list the main graph's initializers with their names, types and dims; and `onnxmap get` of the
first initializers must equal onnx.numpy_helper.to_array, byte for byte.

    compare_dump.py ONNXMAP [--corpus DIR] [--fixtures]

--fixtures builds tests/conformance/make_fixtures.py's models in a temporary folder and checks
them too.
Float fields compare as float32 (onnxmap prints the shortest float32 decimal, protobuf may print
another decimal of the same float32); everything else compares exactly. Ends with
"N passed, N failed, N skipped"; exits 77 (meson's skip) when the corpus is absent.
"""
import argparse
import json
import tempfile
import math
import pathlib
import subprocess
import sys

import numpy as np
import onnx
from google.protobuf import json_format
from onnx import numpy_helper

import make_fixtures
from corpus_sample import sample

UNJUDGED = []  # tensors the reference implementation itself cannot read
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


def tensor_problems(onnxmap, path, model, get_limit):
    """Differences between `ls`/`get` and python3-onnx for the main graph's initializers."""
    run = subprocess.run([onnxmap, "ls", "--json", str(path)], capture_output=True)
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
        if with_data is None:  # load external data only when a payload is compared
            with_data = onnx.load(str(path))
        try:
            expected = numpy_helper.to_array(with_data.graph.initializer[i])
        except (TypeError, ValueError):
            # onnx 1.12 cannot read some tensors (typed COMPLEX): no judge for those.
            UNJUDGED.append(f"{path}: graph.initializer[{i}] ({tensor.name})")
            continue
        # Each load mode in turn, so every mode is judged on the whole corpus at no extra cost.
        mode = ("map", "read", "direct")[i % 3]
        with tempfile.NamedTemporaryFile(suffix=".npy") as out:
            run = subprocess.run([onnxmap, "get", str(path), f"graph.initializer[{i}]", "-o",
                                  out.name, "--load-mode", mode], capture_output=True)
            got = np.load(out.name) if run.returncode == 0 else None
        if got is None or got.dtype != expected.dtype or got.shape != expected.shape or \
                got.tobytes() != expected.tobytes():
            problems.append(f"get --load-mode {mode} graph.initializer[{i}] differs from "
                            "numpy_helper.to_array")
    return problems


def message_of(path):
    """(message class name, parsed message) for a file, or (None, reason) to skip it."""
    data = path.read_bytes()
    if path.suffix == ".onnx":
        return "ModelProto", onnx.load_model_from_string(data)
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    # The backend tests store sequences, maps and optionals as messages of onnx-data.proto,
    # which onnxmap does not read; a TensorProto parse of those has no data_type.
    if tensor.data_type == 0:
        return None, "not a TensorProto (a sequence, map or optional of onnx-data.proto)"
    return "TensorProto", tensor


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("onnxmap")
    parser.add_argument("--corpus")
    parser.add_argument("--fixtures", action="store_true")
    args = parser.parse_args()
    fixtures = tempfile.TemporaryDirectory()
    files = []
    if args.corpus:
        corpus = pathlib.Path(args.corpus)
        if not corpus.is_dir():
            print(f"SKIP: corpus {corpus} not found (it lives in ../shared, absent from a "
                  "user's clone)")
            return 77
        files += sample(sorted(p for p in corpus.rglob("*") if p.suffix in (".onnx", ".pb")))
    if args.fixtures:
        folder = pathlib.Path(fixtures.name)
        make_fixtures.write_models(folder)
        files += sorted(folder.rglob("*.onnx")) + sorted(folder.rglob("*.pb"))
    passed = failed = skipped = 0
    for path in files:
        kind, message = message_of(path)
        if kind is None:
            skipped += 1
            continue
        expected = json_format.MessageToDict(message)
        problems = []
        for omit in (False, True):
            command = [args.onnxmap, "dump", "--message", kind, str(path)]
            if omit:
                command.append("--omit-data")
            run = subprocess.run(command, capture_output=True)
            if run.returncode != 0:
                problems.append(f"exit {run.returncode}: {run.stderr.decode().strip()}")
                break
            want = without_data(expected) if omit else expected
            problems += differences(want, json.loads(run.stdout), "omit-data" if omit else "")
        if kind == "ModelProto" and not problems:
            # Every fixture tensor (they cover every dtype); a sample of the corpus's.
            limit = 1000 if fixtures.name in str(path) else 3
            problems += tensor_problems(args.onnxmap, path, message, limit)
        if problems:
            failed += 1
            print(f"FAIL {path}")
            for p in problems[:20]:
                print(f"     {p}")
        else:
            passed += 1
    for tensor in UNJUDGED:
        print(f"note: python3-onnx cannot read {tensor}; its bytes were not compared")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
