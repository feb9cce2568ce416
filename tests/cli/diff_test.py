"""onnxmap diff on models python3-onnx writes: a model against itself and its external-data copy
is equal (exit 0, nothing printed); one changed byte of one tensor names that tensor (exit 1);
a re-export with a renamed node, a changed attribute, a new opset and a reshaped tensor names
each; --tolerance forgives small changes; a missing file is trouble (exit 2)."""
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper, numpy_helper


def model(weights, alpha=0.5, mul_name="scale", opset=17):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("LeakyRelu", ["h"], ["r"], name="act", alpha=alpha),
             helper.make_node("Mul", ["r", "s"], ["y"], name=mul_name)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["n", 4])],
        [numpy_helper.from_array(a, n) for n, a in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """a.onnx; ext.onnx (a.onnx with external data); byte.onnx (one byte of w changed); b.onnx
    (re-exported: Mul renamed, alpha changed, opset 18, s reshaped); strings.onnx and
    strings2.onnx (a STRING and a BOOL tensor, one value of each changed)."""
    folder = tmp_path_factory.mktemp("diff")
    rng = np.random.default_rng(7)
    weights = {"w": rng.standard_normal((4, 4)).astype(np.float32),
               "s": rng.standard_normal(4).astype(np.float16)}
    onnx.save(model(weights), str(folder / "a.onnx"))
    onnx.save(model(weights), str(folder / "ext.onnx"), save_as_external_data=True,
              location="ext.data", size_threshold=0)
    raw = bytearray((folder / "a.onnx").read_bytes())
    at = raw.find(weights["w"].tobytes())
    raw[at + 5] ^= 0x01
    (folder / "byte.onnx").write_bytes(bytes(raw))
    changed = dict(weights, s=weights["s"].reshape(1, 4))
    onnx.save(model(changed, alpha=0.25, mul_name="scale2", opset=18), str(folder / "b.onnx"))
    for name, labels, flags in (("strings", [b"cat", b"dog"], [True, False]),
                                ("strings2", [b"cat", b"cow"], [True, True])):
        onnx.save(helper.make_model(helper.make_graph([], "g", [], [], [
            helper.make_tensor("labels", T.STRING, [2], labels),
            numpy_helper.from_array(np.array(flags), "flags")])), str(folder / f"{name}.onnx"))
    return folder


@pytest.fixture
def diff(onnxmap, folder):
    return lambda a, b, *args: onnxmap("diff", folder / a, folder / b, *args, text=True)


@pytest.mark.parametrize("other", ["a.onnx", "ext.onnx"])
def test_equal_exit_0_nothing_printed(diff, other):
    r = diff("a.onnx", other)
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr


def test_json_of_equal_models(diff):
    r = diff("a.onnx", "a.onnx", "--json")
    assert r.returncode == 0 and json.loads(r.stdout) == {"equal": True, "differences": []}, \
        r.stdout


def test_one_changed_byte_names_its_tensor_exit_1(diff):
    r = diff("a.onnx", "byte.onnx")
    assert r.returncode == 1 and r.stdout.startswith("tensor w: values: 1 of 16 values differ") \
        and len(r.stdout.splitlines()) == 1, r.stdout + r.stderr


def test_tolerance_forgives_it(diff):
    r = diff("a.onnx", "byte.onnx", "--tolerance", "0.01")
    assert r.returncode == 0 and r.stdout == "", r.stdout


@pytest.fixture(scope="module")
def reexport(onnxmap, folder):
    """(exit status, stderr, {what: (a, b)}) of diff --json a.onnx b.onnx."""
    r = onnxmap("diff", folder / "a.onnx", folder / "b.onnx", "--json", text=True)
    found = {d["what"]: (d["a"], d["b"]) for d in json.loads(r.stdout)["differences"]}
    return r.returncode, r.stderr, found


def test_reexport_exits_1(reexport):
    assert reexport[0] == 1, reexport[1]


@pytest.mark.parametrize("what, a_b", [
    ("node scale: name", ("scale", "scale2")),
    ("node act", ("r = LeakyRelu(h) {alpha=0.5}", "r = LeakyRelu(h) {alpha=0.25}")),
    ("opset ai.onnx", ("17", "18")),
    ("tensor s", ("FLOAT16[4]", "FLOAT16[1, 4]")),
], ids=["the renamed node", "the changed attribute", "the opset", "the reshaped tensor"])
def test_reexport_names(reexport, what, a_b):
    assert reexport[2].get(what) == a_b, reexport[2]


def test_reexport_nothing_else(reexport):
    assert len(reexport[2]) == 4, reexport[2]


def test_text_one_line_each(diff):
    r = diff("a.onnx", "b.onnx")
    assert r.stdout.splitlines()[:1] == ["opset ai.onnx: 17 -> 18"] and \
        len(r.stdout.splitlines()) == 4, r.stdout


def test_string_tensors_equal_exit_0(diff):
    r = diff("strings.onnx", "strings.onnx")
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr


def test_changed_string_and_bool_are_named(diff):
    r = diff("strings.onnx", "strings2.onnx")
    assert r.returncode == 1 and r.stdout.splitlines() == [
        "tensor flags: values: 1 of 2 values differ, max abs 1, max rel 1",
        "tensor labels: values: the strings differ"], r.stdout + r.stderr


def test_missing_file_exits_2_naming_it(diff):
    r = diff("a.onnx", "missing.onnx")
    assert r.returncode == 2 and "missing.onnx" in r.stderr, r.stderr
