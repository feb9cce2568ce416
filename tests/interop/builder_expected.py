"""The model tests/interop/build_models.cpp writes with onnxmap's builder, built here with
onnx.helper: what python3-onnx loads from onnxmap's file must equal this, field for field."""
import numpy as np
from onnx import TensorProto, TypeProto, AttributeProto, helper, numpy_helper

F = TensorProto.FLOAT


def ramp(n):
    return np.arange(n, dtype=np.float32) * 0.5


def tensor_type(elem, dims=None):
    t = TypeProto()
    t.tensor_type.elem_type = elem
    if dims is not None:
        t.tensor_type.shape.SetInParent()
        for d in dims:
            dim = t.tensor_type.shape.dim.add()
            if isinstance(d, str):
                dim.dim_param = d
            else:
                dim.dim_value = d
    return t


def value_info(name, type_proto):
    v = helper.make_empty_tensor_value_info(name)
    v.ClearField("type")
    v.type.CopyFrom(type_proto)
    return v


def body_graph():
    return helper.make_graph(
        [helper.make_node("Identity", ["bx"], ["by"], name="inner")], "body",
        [value_info("bx", tensor_type(F, []))], [value_info("by", tensor_type(F, []))],
        initializer=[numpy_helper.from_array(ramp(8), "body_w")])


def sparse_tensor():
    return helper.make_sparse_tensor(numpy_helper.from_array(ramp(2), "sparse_values"),
                                     numpy_helper.from_array(np.array([1, 5], np.int64),
                                                             "sparse_indices"), [3, 3])


def custom_node():
    seq = TypeProto()
    seq.sequence_type.elem_type.CopyFrom(tensor_type(TensorProto.INT8, [1, "n"]))
    map_type = TypeProto()
    map_type.map_type.key_type = TensorProto.INT64
    map_type.map_type.value_type.CopyFrom(tensor_type(F))
    optional = TypeProto()
    optional.optional_type.elem_type.CopyFrom(tensor_type(TensorProto.INT8))
    opaque = TypeProto()
    opaque.opaque_type.domain, opaque.opaque_type.name = "d", "o"
    node = helper.make_node("Custom", ["y", ""], ["out"], domain="custom")
    node.attribute.extend([
        helper.make_attribute("f", 0.25),
        helper.make_attribute("i", -7),
        helper.make_attribute("s", "text"),
        helper.make_attribute("t", numpy_helper.from_array(np.array([1, 2, 3], np.int64),
                                                           "attr_t")),
        helper.make_attribute("g", body_graph()),
        helper.make_attribute("floats", [1.5, -2.0]),
        helper.make_attribute("ints", [3, -4, 1 << 40]),
        helper.make_attribute("strings", ["a", "b"]),
        helper.make_attribute("tensors", [numpy_helper.from_array(ramp(4), "t0")]),
        helper.make_attribute("graphs", [body_graph()]),
        helper.make_attribute("sparse", sparse_tensor()),
        helper.make_attribute("sparses", [sparse_tensor()]),
        helper.make_attribute("tp", seq),
        helper.make_attribute("tps", [map_type, optional, opaque]),
    ])
    return node


def every():
    w = numpy_helper.from_array(ramp(256).reshape(16, 16), "w")
    w.doc_string = "weights"
    half = helper.make_tensor("half", TensorProto.FLOAT16, [4], bytes(8), raw=True)
    names = helper.make_tensor("names", TensorProto.STRING, [2], [b"alpha", b"beta"])
    if_node = helper.make_node("If", ["cond"], ["z"])
    branch = helper.make_graph([helper.make_node("Identity", ["c"], ["by"])], "branch", [],
                               [value_info("by", tensor_type(F, [32]))])
    if_node.attribute.extend([helper.make_attribute("then_branch", branch),
                              helper.make_attribute("else_branch", branch)])
    sparse_type = TypeProto()
    sparse_type.sparse_tensor_type.elem_type = F
    sparse_type.sparse_tensor_type.shape.dim.add().dim_param = "n"
    sparse_type.sparse_tensor_type.shape.dim.add().dim_value = 3
    sparse_type.denotation = "TENSOR"
    nodes = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(ramp(32), "")),
             helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul", doc_string="y = x w"),
             if_node, custom_node()]
    graph = helper.make_graph(
        nodes, "main", [value_info("x", tensor_type(F, ["batch", 16])),
                        value_info("cond", tensor_type(TensorProto.BOOL, []))],
        [value_info("out", tensor_type(F, ["batch", 16]))], initializer=[w, half, names],
        doc_string="the main graph", value_info=[value_info("sp", sparse_type)],
        sparse_initializer=[sparse_tensor()])
    leaky = helper.make_node("LeakyRelu", ["a"], ["b"])
    leaky.attribute.add(name="alpha", ref_attr_name="alpha", type=AttributeProto.FLOAT)
    function = helper.make_function("custom", "Fn", ["a"], ["b"], [leaky],
                                    [helper.make_opsetid("", 17)], attributes=["alpha"],
                                    doc_string="a function")
    model = helper.make_model(
        graph, ir_version=8, producer_name="onnxmap-builder", producer_version="1.0",
        domain="ai.onnxmap", model_version=(1 << 48) | (2 << 32) | 345, doc_string="every field",
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)],
        functions=[function])
    helper.set_model_props(model, {"author": "onnxmap"})
    return model
