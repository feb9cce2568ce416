#!/usr/bin/python3
"""The onnxmap command on hostile files and in copy mode: invalid models exit 1 with one line
naming the file, never a crash; --no-mmap and a model read from standard input ("-") give the same
output as the mapped file.

    robustness_test.py PATH/TO/onnxmap
"""
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# The command under test; python/tests/test_errors.py imports this file for its hostile files.
ONNXMAP = sys.argv[1] if __name__ == "__main__" else None
results = {"passed": 0, "failed": 0}


def run(*args, stdin=None):
    return subprocess.run([ONNXMAP, *map(str, args)], capture_output=True, input=stdin, timeout=60)


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else ": " + detail))


def varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, payload):
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def deep_graphs(levels):
    """graph.node[0].attribute[0].g... `levels` deep, lengths computed inside out."""
    chain = [7] + [1, 5, 6] * levels  # ModelProto.graph, then GraphProto.node, .attribute, .g
    sizes = [0] * (len(chain) + 1)
    for i in reversed(range(len(chain))):
        sizes[i] = len(varint(chain[i] << 3 | 2)) + len(varint(sizes[i + 1])) + sizes[i + 1]
    return b"".join(varint(n << 3 | 2) + varint(sizes[i + 1]) for i, n in enumerate(chain))


def hostile_files(folder):
    """name -> (bytes, text the one-line error must contain)."""
    node = lambda body: field(7, field(1, body))  # graph.node[0] holding `body`
    (folder / "outside.bin").write_bytes(b"\0" * 16)
    escape = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    escape.data_location = TensorProto.EXTERNAL
    escape.external_data.add(key="location", value="../outside.bin")
    escape_model = helper.make_model(helper.make_graph([], "g", [], [], initializer=[escape]))
    negative = TensorProto(name="n", data_type=TensorProto.FLOAT, dims=[-2])
    negative_model = helper.make_model(helper.make_graph([], "g", [], [], initializer=[negative]))
    return {
        "eleven-byte-varint": (node(b"\xf8\x06" + b"\xff" * 10 + b"\x01"), "graph.node[0]"),
        "wire-type-7": (node(b"\x27\x00"), "bad_wire_type"),
        "field-number-0": (node(b"\x02\x00"), "bad_field_number"),
        "open-group": (node(b"\x2b\x08\x01"), "truncated"),
        "length-past-end": (b"\x3a\x7f\x00", "out_of_bounds"),
        "nested-100000": (deep_graphs(100000), "max_depth 64"),
        "negative-dims": (negative_model.SerializeToString(), "graph.initializer[0].dims"),
        "external-escape": (escape_model.SerializeToString(), "unsafe_path"),
    }


def main():
    folder = pathlib.Path(tempfile.mkdtemp())
    models = folder / "models"
    models.mkdir()
    for name, (content, expected) in hostile_files(folder).items():
        path = models / (name + ".onnx")
        path.write_bytes(content)
        for verb in (["ls"], ["ls", "--no-mmap"], ["ls", "--load-mode", "direct"],
                     ["info", "--stats"], ["info", "--stats", "--load-mode", "direct"]):
            r = run(*verb, path)
            lines = r.stderr.decode().strip().splitlines()
            check(f"{name}: {' '.join(verb)} exits 1 with one line",
                  r.returncode == 1 and len(lines) == 1 and str(path) in lines[0]
                  and expected in lines[0], f"{r.returncode} {lines!r}")
        if name not in ("negative-dims", "external-escape"):  # dump does not resolve tensors
            r = run("dump", path)
            check(f"{name}: dump exits 1", r.returncode == 1, str(r.returncode))

    # Every truncation of a real model: exit 0 (a cut at a field boundary is a smaller model) or
    # 1 with one line; never a crash.
    weights = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    graph = helper.make_graph([helper.make_node("Relu", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              initializer=[weights])
    full = helper.make_model(graph).SerializeToString()
    cut_path = models / "cut.onnx"
    codes = set()
    for cut in range(len(full)):
        cut_path.write_bytes(full[:cut])
        codes.add(run("ls", cut_path).returncode)
    check("every truncation exits 0 or 1", codes <= {0, 1}, str(codes))

    # Copy mode and standard input agree with the mapped file, verb by verb.
    model = models / "good.onnx"
    model.write_bytes(full)
    verbs = {  # name -> the arguments, given the model argument
        "ls": lambda m: ["ls", "--json", m],
        "dump": lambda m: ["dump", m],
        "info": lambda m: ["info", "--json", m],
        "info --stats": lambda m: ["info", "--stats", "--json", m],
        "get": lambda m: ["get", m, "w", "-o", "-"],
    }
    for name, args in verbs.items():
        mapped = run(*args(model))
        copied = run(*args(model), "--no-mmap")
        direct = run(*args(model), "--load-mode", "direct")
        piped = run(*args("-"), stdin=full)
        check(f"{name}: mapped works", mapped.returncode == 0 and mapped.stdout,
              mapped.stderr.decode())
        check(f"{name}: --no-mmap agrees", copied.stdout == mapped.stdout, copied.stderr.decode())
        check(f"{name}: --load-mode direct agrees", direct.stdout == mapped.stdout,
              direct.stderr.decode())
        check(f"{name}: standard input agrees", piped.returncode == 0 and
              piped.stdout == mapped.stdout, piped.stderr.decode())

    # convert --no-mmap writes what the mapped convert writes.
    outputs = {}
    for flag in ([], ["--no-mmap"]):
        (models / f"convert{len(flag)}").mkdir()
        out = models / f"convert{len(flag)}" / "converted.onnx"
        result = run("convert", model, out, "--external-data", "--size-threshold", "0", *flag)
        check(f"convert {flag} works", result.returncode == 0, result.stderr.decode())
        outputs[len(flag)] = (out.read_bytes(), (out.parent / (out.name + ".data")).read_bytes())
    check("convert --no-mmap agrees", outputs[0] == outputs[1])

    for f in sorted(folder.rglob("*"), reverse=True):
        f.rmdir() if f.is_dir() else f.unlink()
    folder.rmdir()
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
