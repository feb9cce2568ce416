"""A view taken from a temporary Model (or ModelSummary) would read a closed model: it must not
compile. Each misuse below is compiled alone against the public headers and must fail on a
deleted function; a control doing the same through a named model must compile, so that a
failure is the API's and not the command's. The snippets compile side by side, once, before the
first case.

The compiler and include folders are conftest.py's (compile_public).
"""
import concurrent.futures
import os

import pytest

PRELUDE = '#include "onnxmap/model.hpp"\nvoid use(const char* p) {\n'

MISUSES = {
    "tensor of a temporary model":
        'auto w = onnxmap::Model::open(p).tensor("w");\n(void)w.bytes();',
    "find_tensor of a temporary model":
        'auto w = onnxmap::Model::open(p).find_tensor("w");',
    "tensor_at of a temporary model": "auto w = onnxmap::Model::open(p).tensor_at(0);",
    "tensors of a temporary model": 'auto all = onnxmap::Model::open(p).tensors("w");',
    "tensor_at_path of a temporary model":
        'auto w = onnxmap::Model::open(p).tensor_at_path("graph.initializer[0]");',
    "nodes of a temporary model's graph":
        "for (auto node : onnxmap::Model::open(p).graph()->nodes()) (void)node.op_type();",
    "functions of a temporary model": "auto f = onnxmap::Model::open(p).functions();",
    "training_info of a temporary model": "auto t = onnxmap::Model::open(p).training_info();",
    "inputs of a temporary summary": "auto in = onnxmap::peek(p).inputs();",
    "outputs of a temporary summary": "auto out = onnxmap::peek(p).outputs();",
}

CONTROL = """const auto model = onnxmap::Model::open(p);
auto w = model.tensor("w");
(void)w.bytes();
for (auto node : model.graph()->nodes()) (void)node.op_type();
(void)model.find_tensor("w"); (void)model.tensor_at(0); (void)model.tensors("w");
(void)model.tensor_at_path("graph.initializer[0]");
(void)model.functions(); (void)model.training_info();
const auto summary = onnxmap::peek(p);
(void)summary.inputs(); (void)summary.outputs();
(void)onnxmap::Model::open(p).tensor_count();"""


def write_snippet(body, folder, name):
    source = folder / (name.replace(" ", "_").replace("'", "") + ".cpp")
    source.write_text(PRELUDE + body + "\n}\n")
    return source


@pytest.fixture(scope="module")
def compiled(compile_public, tmp_path_factory):
    """name -> the compiler's CompletedProcess, for the control and every misuse."""
    folder = tmp_path_factory.mktemp("snippets")
    snippets = dict(MISUSES, control=CONTROL)
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        futures = {name: pool.submit(compile_public, write_snippet(body, folder, name))
                   for name, body in snippets.items()}
    return {name: future.result() for name, future in futures.items()}


def test_control_compiles(compiled):
    assert compiled["control"].returncode == 0, \
        f"the control does not compile:\n{compiled['control'].stderr}"


@pytest.mark.parametrize("name", MISUSES)
def test_misuse_does_not_compile(compiled, name):
    assert compiled["control"].returncode == 0, \
        "the control does not compile, so this failure would not be the API's"
    result = compiled[name]
    assert result.returncode != 0, "it compiles, and the view would dangle"
    assert "delete" in result.stderr, f"it fails, but not on a deleted function:\n{result.stderr}"
