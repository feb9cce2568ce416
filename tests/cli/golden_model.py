"""The small model whose text output tests/cli/golden/ pins, verb by verb: every field `info`
shows (producer_version among them, a 16-letter label), an initializer, a Constant, an If with
two branches, metadata and a two-line doc string. Every field is set explicitly so the file does
not change with the installed onnx version.
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# golden file name -> the command line; MODEL stands for the model's path.
VERBS = {
    "info": ["info", "MODEL"],
    "info-stats": ["info", "MODEL", "--stats"],
    "ls": ["ls", "MODEL"],
    "graph": ["graph", "MODEL"],
    "graph-depth-0": ["graph", "MODEL", "--depth", "0"],
    "dump": ["dump", "MODEL", "--omit-data"],
    "check": ["check", "MODEL"],
    "load": ["load", "MODEL", "--mode", "read", "--threads", "2"],
}


def branch(name, value):
    out = helper.make_tensor_value_info(name + "_out", TensorProto.FLOAT, [2])
    const = helper.make_node("Constant", [], [name + "_out"],
                             value=numpy_helper.from_array(np.full(2, value, np.float32), ""))
    return helper.make_graph([const], name, [], [out])


def write(folder):
    """Writes golden.onnx into `folder` and returns its path."""
    weight = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "weight")
    nodes = [
        helper.make_node("MatMul", ["x", "weight"], ["y"], name="matmul"),
        helper.make_node("ReduceSum", ["y"], ["total"], keepdims=0),
        helper.make_node("Constant", [], ["zero"], value_float=0.0),
        helper.make_node("Greater", ["total", "zero"], ["positive"]),
        helper.make_node("If", ["positive"], ["z"], then_branch=branch("then", 1.0),
                         else_branch=branch("else", -1.0)),
    ]
    graph = helper.make_graph(
        nodes, "golden",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])],
        initializer=[weight])
    model = helper.make_model(graph, ir_version=8, producer_name="onnxmap-tests",
                              producer_version="1.2.3",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.domain = "ai.onnxmap.golden"
    model.model_version = 7
    model.doc_string = "A model for golden outputs.\nIts second line."
    helper.set_model_props(model, {"author": "onnxmap", "license": "Apache-2.0"})
    path = folder / "golden.onnx"
    onnx.save(model, str(path))
    return path
