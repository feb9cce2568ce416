"""Every property, repr and element look-up of every class of the binding, over a model whose file
was cut to nothing after open: each returns a value or raises onnxmap.Error (kind "io"), never
SIGBUS. The classes and their properties are found by introspection, so a definition added
outside the binding's one scope (python/src/binding.hpp, ScopedClass) is swept too. The sweep
runs in a child process: a signal there is this test's failure, not the suite's crash."""
import json
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save_model

import onnxmap
from onnxmap import _onnxmap


def write_model(path):
    weight = numpy_helper.from_array(np.arange(64, dtype=np.float32), "weight")
    weight.doc_string = "a weight"
    labels = helper.make_tensor("labels", TensorProto.STRING, [2], [b"a", b"bb"])
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([1.5], dtype=np.float32), "sparse"),
        numpy_helper.from_array(np.array([3], dtype=np.int64), "sparse_indices"), [8])
    node = helper.make_node("LeakyRelu", ["x"], ["y"], name="leaky", alpha=0.5, doc_string="d")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 64])],
        initializer=[weight, labels], sparse_initializer=[sparse], doc_string="the graph",
        value_info=[helper.make_tensor_value_info("z", TensorProto.FLOAT, [64])])
    function = helper.make_function("custom", "f", ["a"], ["b"], [
        helper.make_node("Relu", ["a"], ["b"], name="inner")], [helper.make_opsetid("", 13)])
    model = helper.make_model(graph, doc_string="the model", functions=[function],
                              opset_imports=[helper.make_opsetid("", 13),
                                             helper.make_opsetid("custom", 1)])
    helper.set_model_props(model, {"key": "value"})
    training = model.training_info.add()
    training.algorithm.CopyFrom(helper.make_graph([], "step", [], []))
    training.update_binding.add(key="weight", value="step_out")
    save_model(model, str(path))


def views(model):
    """The objects of the binding a model leads to, taken while its file is whole."""
    graph = model.graph
    found = [model, graph, model._device_plan(), onnxmap.peek(model.path), model.hash()]
    for sequence in (graph.nodes, graph.inputs, graph.outputs, graph.value_infos,
                     graph.initializers, graph.sparse_initializers, model.functions,
                     model.training_info):
        found += [sequence, *sequence]
    found += [node for function in model.functions for node in function.nodes]
    return found


def outcome(call):
    try:
        call()
        return "ok"
    except onnxmap.Error as error:
        return "error:" + error.kind


def sweep(path):
    """{Class.member: the outcomes ("ok", "error:KIND") over the views of that class} for every
    property and repr of every view, after the file at `path` was cut to no bytes."""
    model = onnxmap.open(path)
    found = views(model)
    os.truncate(path, 0)
    results = {}

    def record(kind, member, call):
        results.setdefault(f"{kind.__name__}.{member}", set()).add(outcome(call))

    for view in found:
        kind = type(view)
        for name in dir(kind):
            if isinstance(getattr(kind, name), property):
                record(kind, name, lambda: getattr(view, name))
        record(kind, "__repr__", lambda: repr(view))
        if isinstance(view, _onnxmap.ViewSequence):
            record(kind, "__contains__", lambda: "weight" in view)
    record(type(model), "keys", model.keys)
    record(type(model), "__getitem__", lambda: model["weight"])
    return {key: sorted(outcomes) for key, outcomes in results.items()}


def test_every_getter_raises_or_returns(tmp_path):
    path = tmp_path / "m.onnx"
    write_model(path)
    child = subprocess.run([sys.executable, __file__, str(path)], capture_output=True,
                           text=True, timeout=120, check=False)
    assert child.returncode == 0, (child.returncode, child.stderr)
    results = json.loads(child.stdout)
    assert all(set(outcomes) <= {"ok", "error:io"} for outcomes in results.values()), results
    # The getters read through the map: outside a scope each of these would have met SIGBUS.
    raised = {key for key, outcomes in results.items() if "error:io" in outcomes}
    for member in ("Model.ir_version", "Graph.name", "Node.op_type", "Node.attributes",
                   "ValueInfo.type", "Tensor.name", "Tensor.doc_string", "SparseTensor.dims",
                   "Function.name", "TrainingInfo.update_binding", "ViewSequence.__contains__",
                   "Model.keys", "Model.__getitem__", "ModelSummary.doc_string",
                   "_DevicePlan.items"):
        assert member in raised, (member, results)
    swept = {key.split(".")[0] for key in results}
    bound = {name for name, value in vars(_onnxmap).items()
             if isinstance(value, type) and any(isinstance(member, property)
                                                for member in vars(value).values())}
    assert bound <= swept, bound - swept


if __name__ == "__main__":
    print(json.dumps(sweep(sys.argv[1])))
