#!/usr/bin/python3
"""Writes the kept inputs of fuzz_save_roundtrip (fuzz_save_roundtrip/*.onnx beside this script).

Small models that reach every path of the writer's Plan::write_chunk: bytes copied from the source
(verbatim messages, raw payloads), bytes the plan encodes (typed fields re-encoded, tags and
lengths), holes (alignment in data files) under the external-data choices, and Constant tensors
moved to initializers (convert_attribute). The replay test (tests/unit/save_roundtrip_replay_test.cpp)
saves each under every choice of options. The files are kept in git; run this again only to
change them:  /usr/bin/python3 tests/fuzz/regressions/make_save_roundtrip_inputs.py
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_save_roundtrip")


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number, wire_type, payload):
    tag = varint(number << 3 | wire_type)
    if wire_type == 2:
        return tag + varint(len(payload)) + payload
    return tag + payload


def tiny_raw():
    """A model about the size of the one the ODR crash in write_chunk was found on: one FLOAT [7]
    initializer in raw_data, nothing else (41 bytes)."""
    tensor = (field(1, 0, varint(7)) + field(2, 0, varint(TensorProto.FLOAT)) + field(8, 2, b"w")
              + field(9, 2, np.arange(7, dtype="<f4").tobytes()))
    return field(7, 2, field(5, 2, tensor))


def odd_wire():
    """Encodings a fuzzer finds and protobuf accepts: unknown fields (copied verbatim), dims not
    packed, the graph given twice (merged), a tensor's name given twice (the last wins)."""
    unknown = field(1000, 2, b"unknown") + field(1001, 0, varint(7))
    first = (field(1, 0, varint(2)) + field(1, 0, varint(2)) + field(2, 0, varint(TensorProto.INT16))
             + field(8, 2, b"old") + unknown + field(8, 2, b"a")
             + field(9, 2, np.arange(4, dtype="<i2").tobytes()))
    second = (field(1, 2, varint(20)) + field(2, 0, varint(TensorProto.UINT8)) + field(8, 2, b"b")
              + field(9, 2, bytes(range(20))))
    return (field(1, 0, varint(8)) + unknown + field(7, 2, field(5, 2, first))
            + field(7, 2, field(2, 2, b"g") + field(5, 2, second)))


def uint4():
    """UINT4 [5] in int32_data, two to an element (built by hand: Debian's onnx predates UINT4)."""
    tensor = TensorProto(name="uint4", data_type=21, dims=[5])
    tensor.int32_data.extend([0x21, 0x43, 0x0F])
    return tensor


def initializers():
    """Every payload field: raw and each typed field, empty and string tensors, sub-byte types."""
    tensors = [
        numpy_helper.from_array(np.arange(16, dtype=np.float32).reshape(4, 4), "raw16"),
        helper.make_tensor("floats", TensorProto.FLOAT, [5], [0.5, 1.5, -2.0, 3.25, 1e30]),
        helper.make_tensor("int64s", TensorProto.INT64, [3], [-1, 2**40, 7]),
        helper.make_tensor("doubles", TensorProto.DOUBLE, [2], [1.0, -0.25]),
        helper.make_tensor("halfs", TensorProto.FLOAT16, [3], np.array([1, 2, 3], np.float16)),
        helper.make_tensor("bools", TensorProto.BOOL, [4], [True, False, True, True]),
        uint4(),
        helper.make_tensor("strings", TensorProto.STRING, [2], [b"ab", b""]),
        helper.make_tensor("empty", TensorProto.FLOAT, [0, 3], []),
        numpy_helper.from_array(np.arange(100, dtype=np.uint8), "raw100"),
    ]
    graph = helper.make_graph([], "g", [], [], initializer=tensors)
    return helper.make_model(graph, producer_name="keep").SerializeToString()


def constants_and_sparse():
    """Constant nodes' tensors (moved out under convert_attribute) and a sparse initializer."""
    value = numpy_helper.from_array(np.arange(24, dtype=np.int32).reshape(2, 12), "c")
    small = helper.make_tensor("s", TensorProto.FLOAT, [1], [4.0])
    nodes = [
        helper.make_node("Constant", [], ["c_out"], value=value),
        helper.make_node("Constant", [], ["s_out"], value=small),
        helper.make_node("Add", ["c_out", "c_out"], ["y"]),
    ]
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([1.0, 2.0, 3.0], np.float32), "sp"),
        numpy_helper.from_array(np.array([0, 5, 9], np.int64), "sp_indices"), [10])
    out = helper.make_tensor_value_info("y", TensorProto.INT32, [2, 12])
    graph = helper.make_graph(nodes, "g", [], [out], sparse_initializer=[sparse])
    return helper.make_model(graph).SerializeToString()


def subgraphs():
    """Initializers and Constants inside an If's branches (nested plans) and in a function."""
    def branch(name, fill):
        tensor = numpy_helper.from_array(np.full(8, fill, np.float32), name + "_w")
        node = helper.make_node("Identity", [name + "_w"], [name + "_y"])
        return helper.make_graph([node], name, [], [
            helper.make_tensor_value_info(name + "_y", TensorProto.FLOAT, [8])], initializer=[tensor])
    cond = helper.make_tensor("cond", TensorProto.BOOL, [], [True])
    node = helper.make_node("If", ["cond"], ["y"], then_branch=branch("then", 1.0),
                            else_branch=branch("else", 2.0))
    fn_const = helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(
        np.arange(6, dtype=np.int64), "k"))
    function = helper.make_function("local", "F", [], ["k"], [fn_const],
                                    [helper.make_opsetid("", 18)])
    graph = helper.make_graph([node], "g", [], [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [8])], initializer=[cond])
    model = helper.make_model(graph, functions=[function], opset_imports=[
        helper.make_opsetid("", 18), helper.make_opsetid("local", 1)])
    return model.SerializeToString()


def main():
    os.makedirs(OUT, exist_ok=True)
    inputs = {
        "tiny-raw.onnx": tiny_raw(),
        "odd-wire.onnx": odd_wire(),
        "initializers.onnx": initializers(),
        "constants-and-sparse.onnx": constants_and_sparse(),
        "subgraphs.onnx": subgraphs(),
    }
    for name, data in inputs.items():
        onnx.ModelProto.FromString(data)  # each is a model protobuf reads
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
