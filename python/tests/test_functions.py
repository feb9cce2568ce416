"""Model.functions and Model.training_info equal onnx.load's, on the fixtures, the corpus and a
model made here with every field of FunctionProto and TrainingInfoProto."""
import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import onnxmap
from conftest import FIXTURE_MODELS, corpus_params
from test_graph import same_attribute, same_graph, same_value_info

# FunctionProto fields newer than onnx 1.12, which keeps them as unknown fields: overload (13),
# attribute_proto (11), value_info (12), metadata_props (14).
OVERLOAD, ATTRIBUTE_PROTO, VALUE_INFO, METADATA_PROPS = 13, 11, 12, 14


def same_function(mine, theirs, extra):
    assert (mine.name, mine.domain, mine.doc_string) == (theirs.name, theirs.domain,
                                                         theirs.doc_string)
    assert mine.inputs == list(theirs.input) and mine.outputs == list(theirs.output)
    assert mine.attributes == list(theirs.attribute)
    assert mine.opset_imports == {o.domain: o.version for o in theirs.opset_import}
    assert len(mine.nodes) == len(theirs.node)
    for node, reference in zip(mine.nodes, theirs.node):
        assert (node.op_type, node.domain, node.name) == (reference.op_type, reference.domain,
                                                          reference.name)
        assert (node.inputs, node.outputs) == (list(reference.input), list(reference.output))
        assert list(node.attributes) == [a.name for a in reference.attribute]
        for a in reference.attribute:
            same_attribute(node.attributes[a.name], a)
    assert mine.overload == extra.get("overload", "")
    defaults = extra.get("attribute_proto", [])
    assert list(mine.attribute_defaults) == [a.name for a in defaults]
    for a in defaults:
        same_attribute(mine.attribute_defaults[a.name], a)
    infos = extra.get("value_info", [])
    assert len(mine.value_infos) == len(infos)
    for m, r in zip(mine.value_infos, infos):
        same_value_info(m, r)
    assert mine.metadata_props == {p.key: p.value for p in extra.get("metadata_props", [])}


def same_training_info(mine, theirs):
    for ours, reference in ((mine.initialization, theirs.initialization),
                            (mine.algorithm, theirs.algorithm)):
        if reference.ByteSize() == 0:
            assert ours is None or (not ours.nodes and not ours.name)
        else:
            same_graph(ours, reference)
    assert mine.initialization_binding == {b.key: b.value for b in theirs.initialization_binding}
    assert mine.update_binding == {b.key: b.value for b in theirs.update_binding}


def same_functions_and_training(path, extras=None):
    reference = onnx.load(str(path), load_external_data=False)
    with onnxmap.open(path) as model:
        assert len(model.functions) == len(reference.functions)
        for i, (mine, theirs) in enumerate(zip(model.functions, reference.functions)):
            same_function(mine, theirs, (extras or {}).get(i, {}))
        assert len(model.training_info) == len(reference.training_info)
        for mine, theirs in zip(model.training_info, reference.training_info):
            same_training_info(mine, theirs)
        return len(model.functions) + len(model.training_info)


@pytest.mark.parametrize("name", FIXTURE_MODELS)
def test_fixture_functions_equal_onnx(fixtures, name):
    found = same_functions_and_training(fixtures / name)
    assert found == (2 if name == "features.onnx" else 0)


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_functions_equal_onnx(path):
    same_functions_and_training(path)


def length_delimited(number, payload):
    """A protobuf field `number` holding `payload` (a serialized message or a string)."""
    key, size, out = number << 3 | 2, len(payload), bytearray()
    for value in (key, size):
        while value >= 0x80:
            out.append(value & 0x7F | 0x80)
            value >>= 7
        out.append(value)
    return bytes(out) + payload


def entry(key, value):
    e = onnx.StringStringEntryProto()
    e.key, e.value = key, value
    return e


def rich_model():
    """Two functions and two training infos; returns the model and the fields onnx 1.12 cannot
    name, per function index."""
    gelu = helper.make_function(
        "custom", "FastGelu", ["x", "bias"], ["y"],
        [helper.make_node("Add", ["x", "bias"], ["t"], name="add"),
         helper.make_node("Mul", ["t", "t"], ["y"], name="square", domain="")],
        [helper.make_opsetid("", 18), helper.make_opsetid("custom", 1)],
        attributes=["approximate"], doc_string="a function")
    scale = helper.make_attribute("scale", 0.5)
    mode = helper.make_attribute("mode", b"tanh")
    axes = helper.make_attribute("axes", [0, -1])
    info = helper.make_tensor_value_info("t", onnx.TensorProto.FLOAT, ["N", 4])
    extra = {"overload": "v2", "attribute_proto": [scale, mode, axes], "value_info": [info],
             "metadata_props": [entry("origin", "test"), entry("level", "2")]}
    gelu.MergeFromString(
        length_delimited(OVERLOAD, b"v2") +
        b"".join(length_delimited(ATTRIBUTE_PROTO, a.SerializeToString())
                 for a in extra["attribute_proto"]) +
        length_delimited(VALUE_INFO, info.SerializeToString()) +
        b"".join(length_delimited(METADATA_PROPS, e.SerializeToString())
                 for e in extra["metadata_props"]))
    empty = helper.make_function("", "Nothing", [], [], [], [])
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4])
    graph = helper.make_graph([helper.make_node("FastGelu", ["x", "b"], ["y"], domain="custom")],
                              "main", [x], [helper.make_tensor_value_info("y", 1, [4])],
                              [numpy_helper.from_array(np.ones(4, np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid("custom", 1)])
    model.functions.extend([gelu, empty])
    init = helper.make_graph([helper.make_node("Constant", [], ["b0"], value=numpy_helper.from_array(
        np.zeros(4, np.float32)))], "init", [], [helper.make_tensor_value_info("b0", 1, [4])])
    step = helper.make_graph([helper.make_node("Add", ["b", "b"], ["b_next"])], "step",
                             [], [helper.make_tensor_value_info("b_next", 1, [4])])
    first = model.training_info.add()
    first.initialization.CopyFrom(init)
    first.algorithm.CopyFrom(step)
    first.initialization_binding.extend([entry("b", "b0")])
    first.update_binding.extend([entry("b", "b_next")])
    model.training_info.add().algorithm.CopyFrom(step)  # no initialization, no bindings
    return model, {0: extra}


def test_every_field_of_functions_and_training_info(tmp_path):
    model, extras = rich_model()
    path = tmp_path / "functions.onnx"
    onnx.save(model, str(path))
    assert same_functions_and_training(path, extras) == 4
    with onnxmap.open(path) as opened:
        functions = opened.functions
        training = opened.training_info
    # Views keep the model alive after close, as tensors do.
    gelu = functions[0]
    assert repr(gelu) == "<onnxmap.Function custom.FastGelu>"
    assert gelu.attribute_defaults == {"scale": pytest.approx(0.5), "mode": b"tanh",
                                       "axes": [0, -1]}
    assert gelu.value_infos[0].type == "FLOAT[N, 4]"
    assert training[1].initialization is None and training[1].update_binding == {}
    assert training[0].initialization.nodes[0].attributes["value"].numpy().tolist() == [0] * 4
    with pytest.raises(AttributeError):
        gelu.name = "other"
