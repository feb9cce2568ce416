"""A single-file model (no external data) cut short after open, at half its size or through its
names (page boundaries): model[name], model.read([...]), the names (keys, iteration), a
tensor's stats(), name and doc string, the model's metadata, the graph's, its nodes' and
functions' fields raise onnxmap.Error (kind "io", naming the file and saying that it shrank)
where they died of SIGBUS."""
import os

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper, save_model

import onnxmap

TENSORS = 300
FLOATS = 1024  # 4 KiB a tensor inline: the names lie on many pages


def tensor_name(i):
    return f"model.layers.{i}.mlp.up_proj.weight.with_a_long_name_{'y' * 60}"


PAGE = os.sysconf("SC_PAGE_SIZE")


# Cuts at a page boundary: bytes past the end on the file's last page read as zeros without a
# fault (the kernel's rule), which no guard can see (docs/format-and-limits.md).
def half(path):
    return path.stat().st_size // 2 // PAGE * PAGE


def names_cut(path):
    """The page of the first initializer's name (the nodes, which name it first, lie before)."""
    return path.read_bytes().rindex(tensor_name(0).encode()) // PAGE * PAGE


@pytest.fixture(params=[half, names_cut], ids=["half", "names"])
def cut(request, tmp_path):
    """A model opened before its file was cut short (at the param's size)."""
    rng = np.random.default_rng(11)
    tensors = [numpy_helper.from_array(rng.standard_normal(FLOATS, dtype=np.float32),
                                       tensor_name(i)) for i in range(TENSORS)]
    tensors.append(helper.make_tensor("labels", TensorProto.STRING, [2], [b"a", b"bb"]))
    nodes = [helper.make_node("Relu", [tensor_name(i)], [f"r{i}"], name=f"relu_{i}",
                              doc_string="doc " * 30) for i in range(TENSORS)]
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info(
        f"r{TENSORS - 1}", TensorProto.FLOAT, [FLOATS])], initializer=tensors)
    # A model-local function: stored after the graph, so past both cuts.
    function = helper.make_function("custom", "leaky", ["a"], ["b"], [
        helper.make_node("LeakyRelu", ["a"], ["b"], name="leaky_node", alpha=0.25)],
        [helper.make_opsetid("", 13)])
    model = helper.make_model(graph, doc_string="cut short " * 20, functions=[function],
                              opset_imports=[helper.make_opsetid("", 13),
                                             helper.make_opsetid("custom", 1)])
    helper.set_model_props(model, {f"key{i}": "value " * 10 for i in range(100)})
    path = tmp_path / "m.onnx"
    save_model(model, str(path))
    opened = onnxmap.open(path)
    os.truncate(path, request.param(path))
    yield opened
    opened.close()


def expect_shrank(call):
    with pytest.raises(onnxmap.Error) as error:
        call()
    assert error.value.kind == "io", error.value
    assert "m.onnx" in str(error.value) and "shrink" in str(error.value), error.value


LAST = tensor_name(TENSORS - 1)


def test_lookup_by_name_raises(cut):
    expect_shrank(lambda: cut[LAST])
    expect_shrank(lambda: cut.tensor(LAST))
    expect_shrank(lambda: LAST in cut)
    expect_shrank(lambda: cut["labels"])


def test_read_by_name_raises(cut):
    expect_shrank(lambda: cut.read([LAST]))
    expect_shrank(lambda: cut.read())


def test_names_raise(cut):
    expect_shrank(cut.keys)
    expect_shrank(lambda: list(cut))
    expect_shrank(lambda: [cut.tensor_at(i).name for i in range(cut.tensor_count())])


def test_stats_raise(cut):
    last = cut.tensor_at(TENSORS - 1)
    expect_shrank(last.stats)
    expect_shrank(lambda: last.doc_string)
    expect_shrank(lambda: repr(last))


def test_model_metadata_raises(cut):
    expect_shrank(lambda: cut.metadata_props)
    expect_shrank(lambda: cut.opset_imports)
    # A scalar field of the model is read to the message's end (the last value wins).
    expect_shrank(lambda: cut.ir_version)
    expect_shrank(lambda: cut.doc_string)


def test_graph_nodes_and_functions_raise(cut):
    # The graph's outputs and initializers lie past both cuts; the function after the graph.
    expect_shrank(lambda: [o.name for o in cut.graph.outputs])
    expect_shrank(lambda: [repr(o) for o in cut.graph.outputs])
    expect_shrank(lambda: [t.name for t in cut.graph.initializers])
    expect_shrank(lambda: [f.name for f in cut.functions])
    expect_shrank(lambda: [n.attributes for f in cut.functions for n in f.nodes])
    expect_shrank(lambda: [(n.op_type, n.inputs) for f in cut.functions for n in f.nodes])
    expect_shrank(lambda: [repr(f) for f in cut.functions])


def test_lookups_by_name_in_sequences_raise(cut):
    # A ViewSequence finds a name by reading its elements' names, past both cuts here.
    expect_shrank(lambda: LAST in cut.graph.initializers)
    expect_shrank(lambda: cut.graph.initializers[LAST])
    expect_shrank(lambda: cut.graph.initializers.index(LAST))
    expect_shrank(lambda: cut.functions["leaky"])
