#!/usr/bin/python3
"""Writes fixture models with python3-onnx covering what the backend corpus lacks: every data type
in raw and typed form, external data, nested If/Loop/Scan subgraphs, model-local functions,
sparse initializers, training info, every attribute type and every TypeProto kind.

    make_fixtures.py OUT_DIR
"""
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

T = TensorProto
rng = np.random.default_rng(7)

NUMPY_TYPES = {T.FLOAT: np.float32, T.UINT8: np.uint8, T.INT8: np.int8, T.UINT16: np.uint16,
               T.INT16: np.int16, T.INT32: np.int32, T.INT64: np.int64, T.BOOL: np.bool_,
               T.FLOAT16: np.float16, T.DOUBLE: np.float64, T.UINT32: np.uint32,
               T.UINT64: np.uint64, T.COMPLEX64: np.complex64, T.COMPLEX128: np.complex128}


def values(dtype, shape):
    np_type = NUMPY_TYPES[dtype]
    if np_type == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(np_type, np.integer):
        info = np.iinfo(np_type)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), shape).astype(np_type)
    if np.issubdtype(np_type, np.complexfloating):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np_type)
    return rng.standard_normal(shape).astype(np_type)


def all_dtypes_tensors():
    tensors = []
    for dtype in NUMPY_TYPES:
        name = T.DataType.Name(dtype).lower()
        array = values(dtype, (2, 3))
        tensors.append(numpy_helper.from_array(array, f"raw_{name}"))
        # make_tensor with raw=False writes the typed field onnx.proto assigns to the type.
        tensors.append(helper.make_tensor(f"typed_{name}", dtype, [2, 3], array.flatten().tolist()))
    tensors.append(helper.make_tensor("typed_bfloat16", T.BFLOAT16, [3], [1.0, -2.5, 3.0]))
    tensors.append(helper.make_tensor("strings", T.STRING, [3], [b"a", b"", b"\xff\x00bytes"]))
    tensors.append(helper.make_tensor("scalar", T.FLOAT, [], [float("nan")]))
    tensors.append(helper.make_tensor("specials", T.FLOAT, [4], [float("inf"), float("-inf"), -0.0, 1e-40]))
    tensors.append(helper.make_tensor("empty", T.FLOAT, [0, 3], []))
    return tensors


def graph_with(nodes, name="g", initializer=(), inputs=None, outputs=None, **kw):
    inputs = inputs or [helper.make_tensor_value_info("x", T.FLOAT, ["N", 3])]
    outputs = outputs or [helper.make_tensor_value_info("y", T.FLOAT, ["N", 3])]
    return helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializer), **kw)


def every_attribute_node():
    tensor = numpy_helper.from_array(np.arange(4, dtype=np.float32), "attr_t")
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.5], np.float32), "sv"),
                                       numpy_helper.from_array(np.array([2], np.int64), "si"), [5])
    sub = graph_with([helper.make_node("Identity", ["x"], ["y"])], "attr_g")
    tp = helper.make_tensor_type_proto(T.INT64, [2, "K"])
    node = helper.make_node("Custom", ["x"], ["y"], domain="test.domain", name="all_attrs",
                            f=0.25, i=-7, s=b"bytes\x00", t=tensor, g=sub, floats=[1.0, float("nan")],
                            ints=[1, -2, 3 << 40], strings=[b"a", b"b"], tensors=[tensor, tensor],
                            graphs=[sub], sparse_tensor=sparse, sparse_tensors=[sparse], tp=tp,
                            type_protos=[tp, helper.make_sequence_type_proto(tp)], doc_string="doc")
    return node


def map_type():
    # onnx 1.12's helper has no make_map_type_proto; the message is simple to fill by hand.
    map_proto = onnx.TypeProto()
    map_proto.map_type.key_type = T.STRING
    map_proto.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(T.INT64, []))
    return map_proto


def every_type_value_infos():
    tensor_type = helper.make_tensor_type_proto(T.FLOAT, [1, "batch", None])
    tensor_type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    kinds = {
        "tensor": tensor_type,
        "sequence": helper.make_sequence_type_proto(tensor_type),
        "map": map_type(),
        "optional": helper.make_optional_type_proto(tensor_type),
        "sparse": helper.make_sparse_tensor_type_proto(T.FLOAT, [10, 10]),
        "unknown_rank": helper.make_tensor_type_proto(T.FLOAT, None),
    }
    infos = [helper.make_value_info(name, tp, doc_string=f"{name} type") for name, tp in kinds.items()]
    opaque = onnx.TypeProto()
    opaque.opaque_type.domain = "test"
    opaque.opaque_type.name = "Blob"
    opaque.denotation = "TENSOR"
    infos.append(helper.make_value_info("opaque", opaque))
    return infos


def control_flow_graph():
    inner = graph_with([helper.make_node("Relu", ["x"], ["y"])], "inner",
                       initializer=[numpy_helper.from_array(np.ones(3, np.float32), "w")])
    loop_body = graph_with([helper.make_node("If", ["cond"], ["y"], then_branch=inner,
                                             else_branch=inner)], "loop_body",
                           initializer=[numpy_helper.from_array(np.zeros(3, np.float32), "w")])
    scan_body = graph_with([helper.make_node("Identity", ["x"], ["y"])], "scan_body")
    nodes = [helper.make_node("Loop", ["", "", "x"], ["l"], body=loop_body),
             helper.make_node("Scan", ["l"], ["y"], body=scan_body, num_scan_inputs=1),
             helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
                 np.array([1, 2], np.int64), "")),
             every_attribute_node()]
    return graph_with(nodes, "control_flow",
                      initializer=[numpy_helper.from_array(np.full(3, 2, np.float32), "w")],
                      value_info=every_type_value_infos())


def write_models(out):
    base = dict(producer_name="fixtures", opset_imports=[helper.make_opsetid("", 17),
                                                         helper.make_opsetid("test.domain", 1)])
    dtypes = helper.make_model(graph_with([], "dtypes", initializer=all_dtypes_tensors()), **base)
    onnx.save(dtypes, str(out / "all_dtypes.onnx"))

    model = helper.make_model(control_flow_graph(), **base)
    model.model_version = (1 << 48) | (2 << 32) | 345
    model.domain = "ai.fixtures"
    model.doc_string = "fixture \u00e9\n\"quoted\""
    helper.set_model_props(model, {"author": "onnxmap", "empty": ""})
    function = helper.make_function("test.domain", "Fn", ["a"], ["b"],
                                    [helper.make_node("Relu", ["a"], ["b"])],
                                    [helper.make_opsetid("", 17)], attributes=["alpha"])
    ref = helper.make_attribute("alpha", 1.0)
    ref.ref_attr_name = "alpha"
    function.node[0].attribute.append(ref)
    model.functions.append(function)
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "sparse_w"),
        numpy_helper.from_array(np.array([[0, 1], [2, 3]], np.int64), "sparse_w_indices"), [4, 4])
    model.graph.sparse_initializer.append(sparse)
    annotation = model.graph.quantization_annotation.add()
    annotation.tensor_name = "w"
    entry = annotation.quant_parameter_tensor_names.add()
    entry.key, entry.value = "SCALE_TENSOR", "w_scale"
    training = model.training_info.add()
    training.initialization.CopyFrom(graph_with([helper.make_node("Identity", ["x"], ["y"])], "init"))
    training.algorithm.CopyFrom(graph_with([helper.make_node("Identity", ["x"], ["y"])], "algo"))
    binding = training.update_binding.add()
    binding.key, binding.value = "w", "y"
    segment_tensor = numpy_helper.from_array(np.ones(2, np.float32), "segmented")
    segment_tensor.segment.begin, segment_tensor.segment.end = 4, 6
    model.graph.initializer.append(segment_tensor)
    onnx.save(model, str(out / "features.onnx"))

    weights = [numpy_helper.from_array(values(T.FLOAT, (64, 32)), f"w{i}") for i in range(3)]
    external = helper.make_model(graph_with([], "external", initializer=weights), **base)
    onnx.save_model(external, str(out / "external_one_file.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="external_one_file.data", size_threshold=0)
    external = helper.make_model(graph_with([], "external", initializer=weights), **base)
    (out / "per_tensor").mkdir(exist_ok=True)
    onnx.save_model(external, str(out / "per_tensor" / "external_per_tensor.onnx"),
                    save_as_external_data=True, all_tensors_to_one_file=False, size_threshold=0)

    for tensor in all_dtypes_tensors()[:6]:
        (out / f"tensor_{tensor.name}.pb").write_bytes(tensor.SerializeToString())


if __name__ == "__main__":
    folder = pathlib.Path(sys.argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    write_models(folder)
