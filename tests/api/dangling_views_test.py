"""A view taken from a temporary Model (or ModelSummary) would read a closed model: it must not
compile. Each misuse below is compiled alone against the public headers and must fail on a
deleted function; a control doing the same through a named model must compile, so that a
failure is the API's and not the command's. The snippets compile side by side, once, before the
first case.

ONNXMAP_CXX is the compiler command as a JSON list, ONNXMAP_INCLUDE the include folders,
separated by os.pathsep (tests/meson.build sets both).
"""
import concurrent.futures
import json
import os
import subprocess

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


def compile_snippet(command, includes, body, folder, name):
    source = folder / (name.replace(" ", "_").replace("'", "") + ".cpp")
    source.write_text(PRELUDE + body + "\n}\n")
    args = command + ["-std=c++20", "-fsyntax-only"]
    args += [f"-I{d}" for d in includes] + [str(source)]
    return subprocess.run(args, capture_output=True, text=True)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """name -> the compiler's CompletedProcess, for the control and every misuse."""
    if not os.environ.get("ONNXMAP_CXX"):
        pytest.fail("ONNXMAP_CXX is not set: the compiler command as a JSON list "
                    "(tests/meson.build sets it)", pytrace=False)
    command = json.loads(os.environ["ONNXMAP_CXX"])
    includes = [d for d in os.environ.get("ONNXMAP_INCLUDE", "").split(os.pathsep) if d]
    folder = tmp_path_factory.mktemp("snippets")
    snippets = dict(MISUSES, control=CONTROL)
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        futures = {name: pool.submit(compile_snippet, command, includes, body, folder, name)
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
