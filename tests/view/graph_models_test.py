"""graph_models.py writes each kind of model with the properties the viewer's graph page tests
rely on, and every one passes onnx.checker (graph_models.write checks with full_check).

Run: cd tests/view && python3 -m pytest -q graph_models_test.py
"""
import collections
import re
import subprocess
import sys

import onnx
import pytest

import graph_models

HERE = graph_models.__file__


def load(tmp_path, kind):
    """Writes the kind into tmp_path (checked there) and loads it back."""
    path = str(tmp_path / f"{kind}.onnx")
    count = graph_models.write(kind, path)
    model = onnx.load(path)
    assert count == len(model.graph.node)
    return model


def uses(graph):
    """How many node inputs (and graph outputs) name each tensor."""
    counts = collections.Counter(name for node in graph.node for name in node.input if name)
    counts.update(out.name for out in graph.output)
    return counts


def outer_names(graph):
    """The tensors a graph reads from the scopes around it: node inputs it defines nowhere."""
    defined = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    defined |= {name for node in graph.node for name in node.output}
    return {name for node in graph.node for name in node.input if name and name not in defined}


def test_paddle(tmp_path):
    model = load(tmp_path, "paddle")
    graph, nodes = model.graph, model.graph.node
    assert (model.producer_name, model.opset_import[0].version) == ("p2o", 11)
    assert len(nodes) == graph_models.PADDLE_NODES and 650 <= len(nodes) <= 700
    assert all(node.name == "" for node in nodes)
    constants = [node for node in nodes if node.op_type == "Constant"]
    assert len(constants) == graph_models.PADDLE_CONSTANTS and 320 <= len(constants) <= 360
    counts = uses(graph)
    assert all(counts[node.output[0]] == 1 for node in constants)
    ops = collections.Counter(node.op_type for node in nodes)
    for op in ("Conv", "BatchNormalization", "Relu", "Clip", "HardSigmoid", "Add", "Resize",
               "Concat", "Reshape", "ConvTranspose", "Sigmoid"):
        assert ops[op] > 0, op
    inits = {t.name for t in graph.initializer}
    assert all(node.input[1] in inits for node in nodes if node.op_type == "Conv")
    assert sum(len(t.raw_data) for t in graph.initializer) < 4 << 20
    assert "conv2d_12.tmp_0" in counts and "batch_norm_3.w_0" in counts
    [x] = graph.input
    assert x.name == "x" and x.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    dims = x.type.tensor_type.shape.dim
    assert [d.dim_value if d.HasField("dim_value") else -1 for d in dims] == [-1, 3, -1, -1]
    assert [out.name for out in graph.output] == ["sigmoid_0.tmp_0"]
    # The residual units of one stage are wired alike: the ops between two residual Adds repeat.
    adds = [i for i, n in enumerate(nodes) if n.output[0].startswith("elementwise_add_")]
    shapes = [tuple(n.op_type for n in nodes[a + 1:b + 1]) for a, b in zip(adds, adds[1:])]
    assert max(collections.Counter(shapes).values()) >= 3


def test_torch(tmp_path):
    pytest.importorskip("torch")
    model = load(tmp_path, "torch")
    nodes = model.graph.node
    assert model.producer_name == "pytorch" and model.opset_import[0].version in (13, 14)
    assert 200 <= len(nodes) <= 250
    names = [node.name for node in nodes]
    assert len(set(names)) == len(names) and all(names)
    assert "Identity_0" in names
    assert any(re.fullmatch(r"/layers\.\d+/MatMul(_\d+)?", name) for name in names)
    ops = collections.Counter(node.op_type for node in nodes)
    assert ops["MatMul"] >= 8 and ops["Softmax"] == 2 and ops["Constant"] > 0


def test_flat(tmp_path):
    model = load(tmp_path, "flat")
    graph, nodes = model.graph, model.graph.node
    assert len(nodes) == graph_models.FLAT_NODES == 300_001
    produced = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    for i, node in enumerate(nodes):
        assert node.name == f"n{i}_{node.op_type}"
        assert all(name in produced for name in node.input), node.name
        produced.update(node.output)
    per_layer = graph_models.FLAT_LAYER_OPS
    layer = [node.op_type for node in nodes[:per_layer]]
    assert "Add" in layer and 10 <= per_layer <= 15
    assert all([node.op_type for node in nodes[i:i + per_layer]] == layer
                for i in range(0, len(nodes) - 1, per_layer))
    # Each layer reads the previous layer's output (its last node's), at the first node and at
    # the residual Add.
    last = nodes[2 * per_layer - 1].name
    assert nodes[2 * per_layer].input[0] == last
    assert sum(last in node.input for node in nodes[2 * per_layer:3 * per_layer]) == 2
    assert [out.name for out in graph.output] == [nodes[-1].name]


def test_subgraphs(tmp_path):
    model = load(tmp_path, "subgraphs")
    nodes = {node.name: node for node in model.graph.node}
    assert all(nodes) and len(nodes) == len(model.graph.node)
    graphs = {node.name: {a.name: a.g for a in node.attribute if a.type == a.GRAPH}
              for node in model.graph.node}
    assert nodes["cond_if"].op_type == "If" and set(graphs["cond_if"]) == {"then_branch",
                                                                           "else_branch"}
    assert nodes["loop_0"].op_type == "Loop" and set(graphs["loop_0"]) == {"body"}
    assert nodes["scan_0"].op_type == "Scan" and set(graphs["scan_0"]) == {"body"}
    ordinary = [n for n in model.graph.node if n.op_type not in ("If", "Loop", "Scan")]
    assert len(ordinary) >= 3
    then_branch = graphs["cond_if"]["then_branch"]
    [inner] = [n for n in then_branch.node if n.op_type == "Loop"]
    assert [a.name for a in inner.attribute] == ["body"]
    loop_body = graphs["loop_0"]["body"]
    assert len(loop_body.input) == 3 and len(loop_body.output) == 3   # one loop-carried value
    bodies = [then_branch, graphs["cond_if"]["else_branch"], loop_body,
              graphs["scan_0"]["body"], inner.attribute[0].g]
    outer = {v.name for v in model.graph.input} | {t.name for t in model.graph.initializer}
    outer |= {name for node in model.graph.node for name in node.output}
    for body in bodies:
        assert outer_names(body) and outer_names(body) <= outer, body.name


def test_cli(tmp_path):
    out = tmp_path / "s.onnx"
    r = subprocess.run([sys.executable, HERE, "subgraphs", str(out)], capture_output=True,
                       text=True)
    assert r.returncode == 0 and "8 nodes" in r.stdout, r.stderr
    onnx.checker.check_model(str(out))
    r = subprocess.run([sys.executable, HERE, "nope", str(out)], capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stderr
