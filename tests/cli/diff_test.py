#!/usr/bin/python3
"""onnxmap diff on models python3-onnx writes: a model against itself and its external-data copy
is equal (exit 0, nothing printed); one changed byte of one tensor names that tensor (exit 1);
a re-export with a renamed node, a changed attribute, a new opset and a reshaped tensor names
each; --tolerance forgives small changes; a missing file is trouble (exit 2).

    diff_test.py PATH/TO/onnxmap
"""
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

ONNXMAP = sys.argv[1]
results = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else ": " + detail))


def diff(a, b, *args):
    return subprocess.run([ONNXMAP, "diff", str(a), str(b), *args], capture_output=True, text=True)


def model(weights, alpha=0.5, mul_name="scale", opset=17):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("LeakyRelu", ["h"], ["r"], name="act", alpha=alpha),
             helper.make_node("Mul", ["r", "s"], ["y"], name=mul_name)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["n", 4])],
        [numpy_helper.from_array(a, n) for n, a in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def main():
    rng = np.random.default_rng(7)
    weights = {"w": rng.standard_normal((4, 4)).astype(np.float32),
               "s": rng.standard_normal(4).astype(np.float16)}
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        onnx.save(model(weights), str(folder / "a.onnx"))
        onnx.save(model(weights), str(folder / "ext.onnx"), save_as_external_data=True,
                  location="ext.data", size_threshold=0)
        for other in ("a.onnx", "ext.onnx"):
            r = diff(folder / "a.onnx", folder / other)
            check(f"equal to {other}: exit 0, nothing printed", r.returncode == 0
                  and r.stdout == "", r.stdout + r.stderr)
        r = diff(folder / "a.onnx", folder / "a.onnx", "--json")
        check("--json of equal models", r.returncode == 0
              and json.loads(r.stdout) == {"equal": True, "differences": []}, r.stdout)

        # One byte of w's payload changed: w is named, with its values' differences.
        raw = bytearray((folder / "a.onnx").read_bytes())
        at = raw.find(weights["w"].tobytes())
        raw[at + 5] ^= 0x01
        (folder / "byte.onnx").write_bytes(bytes(raw))
        r = diff(folder / "a.onnx", folder / "byte.onnx")
        check("one changed byte names its tensor, exit 1", r.returncode == 1
              and r.stdout.startswith("tensor w: values: 1 of 16 values differ")
              and len(r.stdout.splitlines()) == 1, r.stdout + r.stderr)
        r = diff(folder / "a.onnx", folder / "byte.onnx", "--tolerance", "0.01")
        check("--tolerance forgives it", r.returncode == 0 and r.stdout == "", r.stdout)

        # A re-export: the Mul renamed, LeakyRelu's alpha changed, opset 18, s reshaped.
        changed = dict(weights, s=weights["s"].reshape(1, 4))
        onnx.save(model(changed, alpha=0.25, mul_name="scale2", opset=18),
                  str(folder / "b.onnx"))
        r = diff(folder / "a.onnx", folder / "b.onnx", "--json")
        found = {d["what"]: (d["a"], d["b"]) for d in json.loads(r.stdout)["differences"]}
        check("a re-export: exit 1", r.returncode == 1, r.stderr)
        check("the renamed node", found.get("node scale: name") == ("scale", "scale2"),
              str(found))
        check("the changed attribute", found.get("node act") == (
            "r = LeakyRelu(h) {alpha=0.5}", "r = LeakyRelu(h) {alpha=0.25}"), str(found))
        check("the opset", found.get("opset ai.onnx") == ("17", "18"), str(found))
        check("the reshaped tensor", found.get("tensor s") == ("FLOAT16[4]", "FLOAT16[1, 4]"),
              str(found))
        check("nothing else", len(found) == 4, str(found))
        r = diff(folder / "a.onnx", folder / "b.onnx")
        check("text: one line each", r.stdout.splitlines()[:1] == ["opset ai.onnx: 17 -> 18"]
              and len(r.stdout.splitlines()) == 4, r.stdout)

        # STRING and BOOL tensors: compared as strings and as bytes.
        for name, labels, flags in (("strings", [b"cat", b"dog"], [True, False]),
                                    ("strings2", [b"cat", b"cow"], [True, True])):
            onnx.save(helper.make_model(helper.make_graph([], "g", [], [], [
                helper.make_tensor("labels", T.STRING, [2], labels),
                numpy_helper.from_array(np.array(flags), "flags")])), str(folder / f"{name}.onnx"))
        r = diff(folder / "strings.onnx", folder / "strings.onnx")
        check("STRING tensors equal: exit 0", r.returncode == 0 and r.stdout == "", r.stdout + r.stderr)
        r = diff(folder / "strings.onnx", folder / "strings2.onnx")
        check("a changed string and a changed BOOL are named", r.returncode == 1 and
              r.stdout.splitlines() == ["tensor flags: values: 1 of 2 values differ, max abs 1, "
                                        "max rel 1", "tensor labels: values: the strings differ"],
              r.stdout + r.stderr)

        r = diff(folder / "a.onnx", folder / "missing.onnx")
        check("a missing file: exit 2 naming it", r.returncode == 2
              and "missing.onnx" in r.stderr, r.stderr)
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
