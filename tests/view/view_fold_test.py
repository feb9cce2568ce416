"""The graph page's folding rules (docs/view.md, "How the graph folds"), one small model each,
on the JSON /api/graph serves: names that are counters make no groups, unnamed nodes take the
scope of the values they make or of their readers, weight preparation and quantization
plumbing are drawn inside the node they serve, a scope that is not convex (or that closes a
cycle) is opened, repeated blocks start where a layer starts. Each model is also walked whole
and judged (graph_walk.py). And the judge's folding checks can fail.
"""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from graph_checks import LEVEL_KINDS, check_box, check_flow
from graph_judge import GraphJudge
from graph_walk import assert_sound, walk_model
from viewer import Viewer

X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])


def save(folder, name, nodes, inits=(), outputs=("y",), opset=13):
    graph = helper.make_graph(nodes, name, [X], [helper.make_tensor_value_info(
        o, TensorProto.FLOAT, None) for o in outputs], initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    path = folder / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def weight(name, shape=(4, 4), dtype=np.float32):
    return numpy_helper.from_array(np.ones(shape, dtype), name)


def drawn(onnxmap, path, **query):
    """The level boxes of one drawing (first level, nothing unfolded, unless asked)."""
    with Viewer(onnxmap.path, path) as v:
        d = v.get("/api/graph", **({"level": "g:", "open": ""} | query))
    return d, [b for b in d["boxes"] if b["kind"] in LEVEL_KINDS]


def sound(onnxmap, path):
    assert_sound(walk_model(onnxmap, path))


def residual_blocks(count, name, value=lambda i, op: f"v{i}"):
    """`count` blocks y = x + Mul(Relu(x), w), named name(i, op), the first reading x."""
    nodes, x = [], "x"
    for b in range(count):
        i = 3 * b
        nodes += [helper.make_node("Relu", [x], [value(i, "Relu")], name=name(i, "Relu")),
                  helper.make_node("Mul", [value(i, "Relu"), "w"], [value(i + 1, "Mul")],
                                   name=name(i + 1, "Mul")),
                  helper.make_node("Add", [x, value(i + 1, "Mul")],
                                   ["y" if b == count - 1 else value(i + 2, "Add")],
                                   name=name(i + 2, "Add"))]
        x = value(i + 2, "Add")
    return nodes


@pytest.mark.parametrize("style", ["p2o.{op}.{i}", "{op}.{i}", "{op}_{i}", "node_{i}",
                                   "/{op}_{i}"])
def test_counters_are_labels_and_blocks_repeat_from_the_first(onnxmap, tmp_path, style):
    """Op types with counters make no group; structure folds the 4 blocks into "x 4", from
    the first (which reads the graph input, as the others read the block before)."""
    nodes = residual_blocks(4, lambda i, op: style.format(op=op, i=i))
    path = save(tmp_path, "counters", nodes, [weight("w", (1, 4))])
    _, boxes = drawn(onnxmap, path)
    assert [b["kind"] for b in boxes] == ["repeat"], [b["id"] for b in boxes]
    assert boxes[0]["count"] == 4 and boxes[0]["first"].endswith(("Relu.0", "Relu_0", "_0")), \
        boxes[0]
    sound(onnxmap, path)


def test_unnamed_nodes_take_their_outputs_scope_then_their_readers(onnxmap, tmp_path):
    """Unnamed nodes whose outputs carry torch's module path fold by it; an unnamed node whose
    output is not a path takes the scope its readers share."""
    nodes = [helper.make_node("Relu", ["x"], ["/enc/a/Relu_output_0"]),
             helper.make_node("Neg", ["/enc/a/Relu_output_0"], ["onnx::Mul_7"]),
             helper.make_node("Mul", ["onnx::Mul_7", "/enc/a/Relu_output_0"],
                              ["/enc/b/Mul_output_0"]),
             helper.make_node("Abs", ["/enc/b/Mul_output_0"], ["/enc/b/Abs_output_0"]),
             helper.make_node("Sigmoid", ["/enc/b/Abs_output_0"], ["/head/Sigmoid_output_0"]),
             helper.make_node("Neg", ["/head/Sigmoid_output_0"], ["y"])]
    path = save(tmp_path, "unnamed", nodes)
    levels = {}
    for level in ("g:", "g:/", "g:/enc/"):
        levels[level] = [b["id"] for b in drawn(onnxmap, path, level=level)[1]]
    assert levels == {"g:": ["g:/", "n:5"], "g:/": ["g:/enc/", "n:4"],
                      "g:/enc/": ["n:0", "g:/enc/b/"]}, levels
    _, inner = drawn(onnxmap, path, level="g:/enc/")
    assert [b["id"] for b in inner] == ["n:0", "g:/enc/b/"], [b["id"] for b in inner]
    _, b_level = drawn(onnxmap, path, level="g:/enc/b/")
    assert sorted(b["node"] for b in b_level) == [1, 2, 3], b_level  # Neg joined its reader
    sound(onnxmap, path)


def test_shared_weight_preparation_is_shown_in_every_reader(onnxmap, tmp_path):
    """A tied weight (DequantizeLinear then Transpose of one quantized weight, read by two
    MatMuls) and a shape Constant read by two Reshapes: each reader's box shows the whole
    preparation, "shared" in all but its host (its first reader), which alone holds it (the
    walk reaches each node once), navigates to it and its node page; no edge is drawn for it."""
    inits = [numpy_helper.from_array(np.ones((4, 4), np.int8), "wq"),
             numpy_helper.from_array(np.array(0.5, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.int8), "z")]
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [1, 4])
    nodes = [helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["w"]),
             helper.make_node("Transpose", ["w"], ["wt"]),
             helper.make_node("MatMul", ["x", "wt"], ["a"], name="mm1"),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "wt"], ["m"], name="mm2"),
             helper.make_node("Constant", [], ["shp"], value=shape),
             helper.make_node("Reshape", ["m", "shp"], ["r1"], name="rs1"),
             helper.make_node("Reshape", ["r1", "shp"], ["y"], name="rs2")]
    path = save(tmp_path, "shared", nodes, inits)
    d, boxes = drawn(onnxmap, path)
    shown = {b["name"]: [(c["op"], c["node"], c["shared"]) for c in b["constants"]]
             for b in boxes}
    assert shown == {"mm1": [("DequantizeLinear", 0, False), ("Transpose", 1, False)],
                     "relu": [],
                     "mm2": [("DequantizeLinear", 0, True), ("Transpose", 1, True)],
                     "rs1": [("Constant", 5, False)], "rs2": [("Constant", 5, True)]}, shown
    assert [b["quantized"] for b in boxes] == [True, False, True, False, False], boxes
    assert [w["name"] for w in boxes[2]["weights"]] == ["wq", "s", "z"], boxes[2]
    ids = [b["id"] for b in d["boxes"]]
    edges = {(ids[e["from"]], ids[e["to"]]) for e in d["edges"]}
    assert edges == {("i:x", "n:2"), ("n:2", "n:3"), ("n:3", "n:4"), ("n:4", "n:6"),
                     ("n:6", "n:7"), ("n:7", "o:y")}, edges
    with Viewer(onnxmap.path, path) as v:
        assert v.get("/api/graph", node="1")["found"] == "n:2"
        transpose, mm2 = v.get("/api/node", id="1")["drawing"], v.get("/api/node", id="4")
        assert transpose["in"]["id"] == 2 and [n["id"] for n in transpose["also_in"]] == [4]
        assert [(n["id"], n["shared"]) for n in mm2["drawing"]["inside"]] == [(0, True),
                                                                          (1, True)]
        assert v.get("/api/node", id="5")["drawing"]["also_in"][0]["name"] == "rs2"
    sound(onnxmap, path)


def test_a_long_shared_preparation_is_shown_in_part(onnxmap, tmp_path):
    """A chain of 2,000 Negs of a Constant, read by 140 Adds of the input: the first Add holds
    the whole chain; each other shows 64 of it (3 listed, 61 more), so that the boxes cost
    140 x 64 entries, not 140 x 2,001."""
    nodes = [helper.make_node("Constant", [], ["c0"], value=numpy_helper.from_array(
        np.ones(4, np.float32), "c"))]
    nodes += [helper.make_node("Neg", [f"c{i}"], [f"c{i + 1}"]) for i in range(2000)]
    nodes += [helper.make_node("Add", ["x", "c2000"], [f"a{i}" if i < 139 else "y"],
                               name=f"add{i}") for i in range(140)]
    _, boxes = drawn(onnxmap, save(tmp_path, "chain", nodes))
    shown = [len(b["constants"]) + b["more_constants"] for b in boxes]
    assert shown == [2001] + [64] * 139, shown
    assert [c["shared"] for c in boxes[1]["constants"]] == [True] * 3


def test_weight_preparation_and_qdq_are_drawn_inside(onnxmap, tmp_path):
    """DequantizeLinear and Transpose of a quantized weight inside the MatMul; a Reshape of a
    weight read by two nodes inside the first, wiring neither to the other; a QDQ pair on an
    activation inside the node that makes it, which says "quantized"."""
    inits = [numpy_helper.from_array(np.ones((4, 4), np.int8), "wq"),
             numpy_helper.from_array(np.array(0.5, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.int8), "z"),
             weight("b", (4,)), numpy_helper.from_array(np.array([1, 4], np.int64), "shape")]
    nodes = [helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["w"]),
             helper.make_node("Transpose", ["w"], ["wt"]),
             helper.make_node("MatMul", ["x", "wt"], ["m"], name="mm"),
             helper.make_node("Reshape", ["b", "shape"], ["b2"]),
             helper.make_node("Add", ["m", "b2"], ["a"], name="add1"),
             helper.make_node("QuantizeLinear", ["a", "s", "z"], ["aq"]),
             helper.make_node("DequantizeLinear", ["aq", "s", "z"], ["ad"]),
             helper.make_node("Relu", ["ad"], ["r"], name="relu"),
             helper.make_node("Add", ["r", "b2"], ["y"], name="add2")]
    path = save(tmp_path, "weights", nodes, inits)
    d, boxes = drawn(onnxmap, path)
    assert [(b["op"], b["quantized"]) for b in boxes] == [
        ("MatMul", True), ("Add", True), ("Relu", False), ("Add", False)], boxes
    assert [c["op"] for c in boxes[0]["constants"]] == ["DequantizeLinear", "Transpose"]
    index = {b["id"]: k for k, b in enumerate(d["boxes"])}
    edges = {(d["boxes"][e["from"]]["id"], d["boxes"][e["to"]]["id"]) for e in d["edges"]}
    assert ("n:4", "n:7") in edges and ("n:4", "n:8") not in edges, edges  # add1 -> relu
    assert ("n:2", "n:4") in edges and len(index) == 4 + 2, index
    sound(onnxmap, path)


def test_scopes_that_are_not_convex_are_opened(onnxmap, tmp_path):
    """s/a -> t/b -> s/c: folding s/ would draw s -> t -> s; it is left open. And two convex
    groups A = {a1, a2}, B = {b1, b2} with a1 -> b1 and b2 -> a2 close a cycle: both open."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="s/a"),
             helper.make_node("Neg", ["a"], ["b"], name="t/b"),
             helper.make_node("Abs", ["b"], ["c"], name="s/c"),
             helper.make_node("Relu", ["c"], ["a1"], name="A/a1"),
             helper.make_node("Neg", ["a1"], ["z"], name="B/b1"),
             helper.make_node("Abs", ["c"], ["b2"], name="B/b2"),
             helper.make_node("Neg", ["b2"], ["y"], name="A/a2")]
    path = save(tmp_path, "convex", nodes, outputs=("y", "z"))
    _, boxes = drawn(onnxmap, path)
    ids = [b["id"] for b in boxes]
    assert not {"g:s/", "g:A/", "g:B/"} & set(ids) and len(ids) == 7, ids
    sound(onnxmap, path)


def keras_chain(stages):
    """A chain as tf2onnx writes a Keras model: layers model/conv2d_K/Conv2D (a MatMul here),
    model/leaky_re_lu_K/LeakyRelu, model/tf.math.maximum_K/Maximum (K counting the convs from
    "" for the first), a model/max_pooling2d_J/MaxPool closing each stage of `stages` (convs
    per stage); the first conv reads the input through an inserted Conv2D__6 Reshape."""
    nodes, inits, x, k = [], [numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
                              numpy_helper.from_array(np.array([1, 4], np.int64), "shape")], "x", 0

    def add(op, scope, inputs, **attrs):
        out = f"model/{scope}/{op}:0"
        nodes.append(helper.make_node(op, inputs, [out], name=f"model/{scope}/{op}", **attrs))
        return out

    x = add("Reshape", "conv2d", [x, "shape"])
    for j, convs in enumerate(stages):
        for _ in range(convs):
            n = f"_{k}" if k else ""
            inits.append(weight(f"w{k}"))
            x = add("MatMul", f"conv2d{n}", [x, f"w{k}"])
            x = add("Max", f"tf.math.maximum{n}", [add("LeakyRelu", f"leaky_re_lu{n}", [x]),
                                                     "zero"])
            k += 1
        x = add("MaxPool", f"max_pooling2d_{j}" if j else "max_pooling2d", [x], kernel_shape=[1])
    nodes.append(helper.make_node("Identity", [x], ["y"], name="model/output/Identity"))
    return nodes, inits


def test_runs_of_a_chain_start_where_a_layer_starts(onnxmap, tmp_path):
    """A chain of Keras layers (every cut crosses one edge): the runs start at a conv2d_K/,
    where the layer starts by its name (leaky_re_lu_K/ continues it), and a stage's block ends
    with its rarest unit, the pooling; the first stage (a conv short) is left before them."""
    path = save(tmp_path, "keras", *keras_chain([3, 3, 3, 3]))
    _, boxes = drawn(onnxmap, path, level="g:model/")
    runs = [(b["first"], b["last"], b["count"]) for b in boxes if b["kind"] == "repeat"]
    assert runs == [("conv2d_1/", "conv2d_2/", 2), ("conv2d_3/", "conv2d_9/", 3)], \
        [b["id"] for b in boxes]
    sound(onnxmap, path)


def test_the_judge_finds_folding_faults(tmp_path):
    """check_flow finds an edge drawn upwards and a cycle; check_box a group that is not
    convex and a group named after an op type (paddle's old "Conv." boxes)."""
    up = {"boxes": [{"id": "n:0", "y": 100, "height": 40}, {"id": "n:1", "y": 0, "height": 40}],
          "edges": [{"from": 0, "to": 1}]}
    assert any("points up" in p for p in check_flow(up))
    cycle = {"boxes": [{"id": "n:0", "y": 0, "height": 40}, {"id": "n:1", "y": 100,
                                                             "height": 40}],
             "edges": [{"from": 0, "to": 1}, {"from": 1, "to": 0}]}
    assert any("cycle" in p for p in check_flow(cycle))
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="s/a"),
             helper.make_node("Neg", ["a"], ["b"], name="t/b"),
             helper.make_node("Abs", ["b"], ["c"], name="s/c"),
             helper.make_node("Relu", ["c"], ["d"], name="Relu.k.d"),
             helper.make_node("Relu", ["d"], ["y"], name="Relu.k.e")]
    judge = GraphJudge(onnx.load(str(save(tmp_path, "faults", nodes))).graph)
    box = {"id": "g:s/", "kind": "group", "prefix": "s/", "nodes": 2,
           "ops": [{"op": "Abs", "count": 1}, {"op": "Relu", "count": 1}]}
    assert any("not convex" in p for p in check_box(judge, box, ""))
    box = {"id": "g:Relu.", "kind": "group", "prefix": "Relu.", "nodes": 2,
           "ops": [{"op": "Relu", "count": 2}]}
    assert any("named after the op type" in p for p in check_box(judge, box, ""))
