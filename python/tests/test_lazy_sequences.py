"""The lists of views (Graph.nodes, inputs, outputs, value_infos, initializers,
sparse_initializers; Function.nodes and value_infos; Model.functions and training_info;
ModelSummary.inputs and outputs) are onnxmap.ViewSequence: read-only sequences whose elements
are made when read. They agree with the list made from them (indexes, negative ones, slices),
find elements by name, and outlive the Model object, as every view of the package does. A look
at the metadata imports no NumPy."""
import collections.abc
import gc
import itertools
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper, save_model

import onnxmap

NODES = 7


@pytest.fixture
def chain(tmp_path):
    """A chain of NODES Add nodes, each with its own initializer w{i}, and two value_infos."""
    nodes = [helper.make_node("Add", [f"v{i}", f"w{i}"], [f"v{i + 1}"], name=f"add{i}")
             for i in range(NODES)]
    weights = [numpy_helper.from_array(np.full(3, i, np.float32), f"w{i}") for i in range(NODES)]
    info = [helper.make_tensor_value_info(f"v{i}", TensorProto.FLOAT, [3]) for i in (2, 4)]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info(f"v{NODES}", TensorProto.FLOAT, [3])],
        initializer=weights, value_info=info)
    path = tmp_path / "chain.onnx"
    save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def every_sequence(model):
    """(what, sequence) for every ViewSequence a model lists its views in."""
    graph = model.graph
    out = [("nodes", graph.nodes), ("inputs", graph.inputs), ("outputs", graph.outputs),
           ("value_infos", graph.value_infos), ("initializers", graph.initializers),
           ("sparse_initializers", graph.sparse_initializers),
           ("functions", model.functions), ("training_info", model.training_info)]
    for function in model.functions:
        out += [("function.nodes", function.nodes), ("function.value_infos",
                                                     function.value_infos)]
    return out


def names(items):
    return [item.name for item in items]


def test_every_listing_is_a_view_sequence(chain, fixtures):
    summary = onnxmap.peek(chain)
    with onnxmap.open(chain) as model, onnxmap.open(fixtures / "features.onnx") as features:
        listed = every_sequence(model) + every_sequence(features) + [
            ("summary.inputs", summary.inputs), ("summary.outputs", summary.outputs)]
        assert len(listed) > 12  # features.onnx has functions
        for what, sequence in listed:
            assert type(sequence) is onnxmap.ViewSequence, what
            assert not isinstance(sequence, list), what
            assert isinstance(sequence, collections.abc.Sequence), what


def test_elements_are_made_when_read(chain):
    with onnxmap.open(chain) as model:
        nodes = model.graph.nodes
        first = nodes[0]
        # A list hands back the object it holds; a ViewSequence makes a new one each time.
        assert nodes[0] is not first
        assert nodes[0].name == first.name == "add0"


def test_indexes_agree_with_a_list(chain):
    with onnxmap.open(chain) as model:
        for sequence in (model.graph.nodes, model.graph.initializers):
            listed = list(sequence)
            assert len(sequence) == len(listed) == NODES
            for i in range(-NODES, NODES):
                assert sequence[i].name == listed[i].name, i
            for i in (NODES, NODES + 5, -NODES - 1):
                with pytest.raises(IndexError):
                    sequence[i]
            assert names(sequence[np.int64(2):]) == names(listed[2:])
            assert sequence[np.int64(-1)].name == listed[-1].name


SLICE_BOUNDS = [None, 0, 1, 3, -1, -3, NODES, NODES + 4, -NODES - 4]
SLICE_STEPS = [None, 1, 2, 3, -1, -2, NODES + 1]


def test_slices_agree_with_a_list(chain):
    with onnxmap.open(chain) as model:
        nodes = model.graph.nodes
        expected = names(list(nodes))
        for start, stop, step in itertools.product(SLICE_BOUNDS, SLICE_BOUNDS, SLICE_STEPS):
            cut = nodes[start:stop:step]
            assert type(cut) is onnxmap.ViewSequence
            assert names(cut) == expected[start:stop:step], (start, stop, step)
            # A slice of a slice picks what the same slices of a list pick.
            assert names(cut[1::2][::-1]) == expected[start:stop:step][1::2][::-1]
        with pytest.raises(ValueError):
            nodes[::0]


def test_empty_sequences(chain):
    with onnxmap.open(chain) as model:
        for sequence in (model.functions, model.graph.sparse_initializers, model.graph.nodes[5:2]):
            assert len(sequence) == 0 and not sequence
            assert list(sequence) == [] and sequence == []
            with pytest.raises(IndexError):
                sequence[0]
            with pytest.raises(IndexError):
                sequence[-1]


def test_iteration_and_reversed(chain):
    with onnxmap.open(chain) as model:
        nodes = model.graph.nodes
        iterator = iter(nodes)
        assert iter(iterator) is iterator
        assert names(iterator) == [f"add{i}" for i in range(NODES)]
        with pytest.raises(StopIteration):
            next(iterator)
        assert names(reversed(nodes)) == [f"add{i}" for i in reversed(range(NODES))]
        assert [n.op_type for n in nodes] == ["Add"] * NODES


def test_lookup_by_name(chain):
    with onnxmap.open(chain) as model:
        graph = model.graph
        assert graph.initializers["w3"].numpy().tolist() == [3.0] * 3
        assert graph.nodes["add6"].inputs == ["v6", "w6"]
        assert graph.value_infos["v4"].shape == (3,)
        assert "w0" in graph.initializers and "add2" in graph.nodes
        assert "v0" in graph.inputs and "missing" not in graph.outputs
        assert graph.initializers.index("w5") == 5 and graph.nodes.index("add1") == 1
        assert graph.initializers.count("w5") == 1 and graph.nodes.count("missing") == 0
        assert graph.nodes[2:].index("add4") == 2  # a position in the slice
        assert graph.nodes.index("add4", 1, 5) == 4
        with pytest.raises(ValueError):
            graph.nodes.index("add4", 5)
        with pytest.raises(KeyError):
            graph.initializers["missing"]
        with pytest.raises(ValueError):
            graph.nodes.index("missing")
        assert "add2" not in graph.nodes[3:]
        assert 3 not in graph.nodes and None not in graph.nodes  # not names: compared as a list


def test_no_names_in_training_info(fixtures):
    with onnxmap.open(fixtures / "features.onnx") as model:
        assert len(model.training_info) == 1
        assert "init" not in model.training_info
        with pytest.raises(KeyError):
            model.training_info["init"]
        assert model.graph.sparse_initializers["sparse_w"].dims == (4, 4)


def test_list_behaviour_kept(chain):
    with onnxmap.open(chain) as model:
        graph = model.graph
        joined = graph.inputs + graph.outputs
        assert type(joined) is list and names(joined) == ["v0", f"v{NODES}"]
        assert names([] + graph.outputs) == names(graph.outputs + []) == [f"v{NODES}"]
        assert names(list(graph.value_infos) + graph.inputs) == ["v2", "v4", "v0"]
        assert graph.nodes != [] and graph.nodes[:0] == [] and model.functions == []
        assert graph.nodes != graph.nodes[:3]
        assert graph.nodes != (1, 2)  # a tuple is no list
        with pytest.raises(TypeError):
            graph.nodes + (1,)
        with pytest.raises(TypeError):
            hash(graph.nodes)
        with pytest.raises(TypeError):
            graph.nodes[1.5]


def test_repr_reads_as_a_list(chain):
    with onnxmap.open(chain) as model:
        assert repr(model.graph.inputs) == "[<onnxmap.ValueInfo v0: FLOAT[3]>]"
        assert repr(model.functions) == "[]"
        assert repr(model.graph.nodes[:2]) == "[<onnxmap.Node Add add0>, <onnxmap.Node Add add1>]"


def test_repr_of_a_long_sequence(tmp_path):
    nodes = [helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"], name=f"r{i}") for i in range(25)]
    graph = helper.make_graph(nodes, "g", [], [])
    save_model(helper.make_model(graph), str(tmp_path / "long.onnx"))
    with onnxmap.open(tmp_path / "long.onnx") as model:
        text = repr(model.graph.nodes)
        assert text.startswith("[<onnxmap.Node Relu r0>, ") and text.endswith(", ... 15 more]")
        assert text.count("<onnxmap.Node") == 10


def test_sequences_outlive_the_model(chain):
    model = onnxmap.open(chain)
    nodes, weights, iterator = model.graph.nodes, model.graph.initializers, iter(
        model.graph.outputs)
    tail = weights[-3:]
    model.close()
    del model
    gc.collect()
    assert names(nodes) == [f"add{i}" for i in range(NODES)]
    assert [t.numpy()[0] for t in tail] == [4.0, 5.0, 6.0]
    assert weights["w2"].numpy().tolist() == [2.0] * 3
    assert next(iterator).name == f"v{NODES}"


def test_generic_alias():
    alias = onnxmap.ViewSequence[onnxmap.Node]
    assert alias.__origin__ is onnxmap.ViewSequence and alias.__args__ == (onnxmap.Node,)


PEEK = """
import sys
import onnxmap
with onnxmap.open(sys.argv[1]) as model:
    nodes = model.graph.nodes
    print(len(nodes), nodes[-1].op_type, model.graph.initializers[-1].shape, "numpy" in sys.modules)
"""


PYBIND11 = tuple(int(part) for part in onnxmap._onnxmap._pybind11_version.split(".")[:2])


@pytest.mark.skipif(PYBIND11 < (2, 12),
                    reason="a build with pybind11 before 2.12 imports NumPy to refuse NumPy 2")
def test_a_look_at_metadata_imports_no_numpy(chain):
    # NumPy's import is most of the package's, and starts a thread pool that spins a while.
    done = subprocess.run([sys.executable, "-c", PEEK, str(chain)], capture_output=True,
                          text=True, check=True)
    assert done.stdout.split() == [str(NODES), "Add", "(3,)", "False"]
