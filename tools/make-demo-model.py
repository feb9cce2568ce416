#!/usr/bin/python3
"""Writes the small demo model tools/demo.sh shows: a two-layer MLP whose weights live in an
external data file, as exporters of large models write them.

    tools/make-demo-model.py OUT_DIR     -> OUT_DIR/demo.onnx, OUT_DIR/demo.onnx.data
"""
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    hidden, ffn = 64, 256
    weights = [
        numpy_helper.from_array(rng.standard_normal((hidden, ffn), dtype=np.float32), "mlp.up.weight"),
        numpy_helper.from_array(rng.standard_normal((ffn, hidden), dtype=np.float32), "mlp.down.weight"),
        numpy_helper.from_array(np.ones(hidden, dtype=np.float16), "norm.weight"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "mlp.up.weight"], ["h"], name="up"),
        helper.make_node("Relu", ["h"], ["a"], name="act"),
        helper.make_node("MatMul", ["a", "mlp.down.weight"], ["y"], name="down"),
    ]
    graph = helper.make_graph(
        nodes, "demo_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", hidden])],
        initializer=weights)
    model = helper.make_model(graph, producer_name="onnxmap-demo",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.model_version = (1 << 48) | (2 << 32) | 345  # SemVer 1.2.345
    helper.set_model_props(model, {"purpose": "demo"})
    onnx.save_model(model, str(out / "demo.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="demo.onnx.data", size_threshold=0)


if __name__ == "__main__":
    main()
