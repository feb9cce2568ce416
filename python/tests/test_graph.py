"""Model metadata and the graph walk equal onnx.load's, on the fixtures and the corpus."""
import numpy as np
import onnx
import pytest
from onnx import helper

import onnxmap
from conftest import FIXTURE_MODELS, corpus_params


def same_value_info(mine, theirs):
    assert mine.name == theirs.name
    tensor_type = theirs.type.tensor_type
    if theirs.type.WhichOneof("value") == "tensor_type":
        assert mine.elem_type == onnx.TensorProto.DataType.Name(tensor_type.elem_type)
        if not tensor_type.HasField("shape"):
            assert mine.shape is None
            return
        expected = tuple(d.dim_value if d.HasField("dim_value") else
                         (d.dim_param if d.HasField("dim_param") else None)
                         for d in tensor_type.shape.dim)
        assert mine.shape == expected


def stored_value(attribute):
    """The value an AttributeProto holds, as onnxmap gives it: for a reference to a function's
    attribute (ref_attr_name), the field it carries, which onnx 1.12 gives and later versions
    refuse to."""
    if attribute.ref_attr_name:
        attribute = onnx.AttributeProto.FromString(attribute.SerializeToString())
        attribute.ClearField("ref_attr_name")
    return helper.get_attribute_value(attribute)


def same_attribute(mine, theirs):
    expected = stored_value(theirs)
    kind = theirs.type
    A = onnx.AttributeProto
    if kind == A.FLOAT:
        assert np.float32(mine) == np.float32(expected) or (np.isnan(mine) and np.isnan(expected))
    elif kind in (A.INT, A.STRING, A.INTS, A.STRINGS):
        assert mine == expected
    elif kind == A.FLOATS:
        assert np.array_equal(np.float32(mine), np.float32(expected), equal_nan=True)
    elif kind == A.TENSOR:
        assert mine.data_type == onnx.TensorProto.DataType.Name(expected.data_type)
        assert mine.shape == tuple(expected.dims)
    elif kind == A.GRAPH:
        same_graph(mine, expected)
    elif kind == A.GRAPHS:
        assert len(mine) == len(expected)
        for m, e in zip(mine, expected):
            same_graph(m, e)
    elif kind == A.TENSORS:
        assert [t.shape for t in mine] == [tuple(t.dims) for t in expected]
    elif kind == A.SPARSE_TENSOR:
        assert mine.dims == tuple(expected.dims)


def same_graph(mine, theirs):
    assert mine.name == theirs.name
    assert [i.name for i in mine.initializers] == [t.name for t in theirs.initializer]
    for ours, reference in ((mine.inputs, theirs.input), (mine.outputs, theirs.output),
                            (mine.value_infos, theirs.value_info)):
        assert len(ours) == len(reference)
        for m, r in zip(ours, reference):
            same_value_info(m, r)
    assert len(mine.nodes) == len(theirs.node)
    for node, reference in zip(mine.nodes, theirs.node):
        assert (node.op_type, node.domain, node.name) == (reference.op_type, reference.domain,
                                                          reference.name)
        assert (node.inputs, node.outputs) == (list(reference.input), list(reference.output))
        attributes = node.attributes
        assert list(attributes) == [a.name for a in reference.attribute]
        for a in reference.attribute:
            same_attribute(attributes[a.name], a)


def same_model(path):
    reference = onnx.load(str(path), load_external_data=False)
    with onnxmap.open(path) as model:
        assert model.ir_version == reference.ir_version
        assert model.producer_name == reference.producer_name
        assert model.producer_version == reference.producer_version
        assert model.domain == reference.domain
        assert model.model_version == reference.model_version
        assert model.doc_string == reference.doc_string
        assert model.opset_imports == {o.domain: o.version for o in reference.opset_import}
        assert model.metadata_props == {p.key: p.value for p in reference.metadata_props}
        same_graph(model.graph, reference.graph)
        summary = onnxmap.peek(path)
        assert summary.ir_version == reference.ir_version
        assert [i.name for i in summary.inputs] == [i.name for i in reference.graph.input]
        assert [o.name for o in summary.outputs] == [o.name for o in reference.graph.output]


@pytest.mark.parametrize("name", FIXTURE_MODELS)
def test_fixture_model_equals_onnx(fixtures, name):
    same_model(fixtures / name)


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_model_equals_onnx(path):
    same_model(path)


def test_features_fixture_details(fixtures):
    with onnxmap.open(fixtures / "features.onnx") as model:
        assert model.metadata_props == {"author": "onnxmap", "empty": ""}
        assert model.model_version == (1 << 48) | (2 << 32) | 345
        custom = model.graph.nodes[3].attributes
        assert custom["s"] == b"bytes\x00" and custom["i"] == -7
        assert custom["ints"] == [1, -2, 3 << 40]
        assert np.array_equal(custom["t"].numpy(), np.arange(4, dtype=np.float32))
        assert custom["sparse_tensor"].dims == (5,)
        assert custom["tp"] == "INT64[2, K]"
        assert model["c"].numpy().tolist() == [1, 2]  # a Constant found by its output name
