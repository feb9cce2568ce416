#!/usr/bin/python3
"""onnxmap stats against numpy: every numeric dtype's min, max, mean, std, zeros, NaN and
infinity counts and histogram, on tensors made by python3-onnx with NaNs, infinities and zeros
in them; the float8 and 4-bit types (which python3-onnx 1.12 cannot decode) on every bit pattern,
against the values their definitions in onnx.proto give.

    stats_test.py PATH/TO/onnxmap
"""
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

import numpy_stats
import onnx


ONNXMAP = sys.argv[1]
results = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else ": " + detail))


def stats(path, *args):
    r = subprocess.run([ONNXMAP, "stats", str(path), "--json", *args], capture_output=True)
    if r.returncode != 0:
        raise AssertionError(r.stderr.decode())
    return {row["name"]: row for row in json.loads(r.stdout)}


def expect(name, row, values, bins=32):
    numpy_stats.expect(check, name, row, values, bins)


def numpy_types(folder):
    path, arrays = numpy_stats.types_model(folder)
    rows = stats(path)
    for name, values in arrays.items():
        expect(name, rows[name], np.asarray(values, dtype=np.float64))
    rows = stats(path, "f32", "--bins", "7")
    check("NAME picks one tensor, --bins", list(rows) == ["f32"] and
          len(rows["f32"]["histogram"]) == 7)
    expect("f32 in 7 bins", rows["f32"], arrays["f32"].astype(np.float64), bins=7)
    check("a NAME may be a path, as ls shows it",
          list(stats(path, "graph.initializer[0]")) == ["f32"])


# Every bit pattern of each 8-bit float type: (NaNs, infinities, zeros, largest finite value).
FLOAT8 = {
    17: ("FLOAT8E4M3FN", 2, 0, 2, 448.0),
    18: ("FLOAT8E4M3FNUZ", 1, 0, 1, 240.0),
    19: ("FLOAT8E5M2", 6, 2, 2, 57344.0),
    20: ("FLOAT8E5M2FNUZ", 1, 0, 1, 57344.0),
    24: ("FLOAT8E8M0", 1, 0, 0, 2.0 ** 127),
}


def raw_tensor(name, data_type, dims, raw):
    t = onnx.TensorProto()
    t.name = name
    t.data_type = data_type
    t.dims.extend(dims)
    t.raw_data = raw
    return t


def small_floats(folder):
    tensors = [raw_tensor(f"t{k}", k, [256], bytes(range(256))) for k in FLOAT8]
    # 4-bit types, two to a byte: every pattern once.
    nibbles = bytes(lo | hi << 4 for lo, hi in zip(range(0, 16, 2), range(1, 16, 2)))
    tensors += [raw_tensor("int4", 22, [16], nibbles), raw_tensor("uint4", 21, [16], nibbles),
                raw_tensor("fp4", 23, [16], nibbles)]
    model = onnx.ModelProto()
    model.ir_version = 14
    model.graph.name = "g"
    model.graph.initializer.extend(tensors)
    path = folder / "small.onnx"
    path.write_bytes(model.SerializeToString())
    rows = stats(path)
    for k, (name, nans, infinities, zeros, largest) in FLOAT8.items():
        row = rows[f"t{k}"]
        got = (row["nans"], row["infinities"], row["zeros"], row["max"])
        check(f"{name}: every pattern", got == (nans, infinities, zeros, largest)
              and row["count"] == 256, f"{got}")
        if k != 24:
            check(f"{name}: symmetric", row["min"] == -largest and numpy_stats.close(row["mean"], 0.0),
                  str(row))
    check("INT4: every value", (rows["int4"]["min"], rows["int4"]["max"]) == (-8, 7)
          and numpy_stats.close(rows["int4"]["mean"], -0.5), str(rows["int4"]))
    check("UINT4: every value", (rows["uint4"]["min"], rows["uint4"]["max"]) == (0, 15))
    fp4 = rows["fp4"]
    check("FLOAT4E2M1: every value", (fp4["min"], fp4["max"], fp4["zeros"]) == (-6, 6, 2)
          and numpy_stats.close(fp4["mean"], 0.0), str(fp4))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        numpy_types(folder)
        small_floats(folder)
        r = subprocess.run([ONNXMAP, "stats", str(folder / "types.onnx"), "f32"],
                           capture_output=True, text=True)
        lines = r.stdout.splitlines()
        check("text: a header and one row", r.returncode == 0 and len(lines) == 2
              and lines[0].split()[:4] == ["NAME", "DTYPE", "COUNT", "MIN"]
              and lines[1].startswith("f32 "), r.stdout)
        r = subprocess.run([ONNXMAP, "stats", str(folder / "types.onnx"), "nope"],
                           capture_output=True, text=True)
        check("an unknown name: exit 1 naming it", r.returncode == 1 and "nope" in r.stderr,
              r.stderr)
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
