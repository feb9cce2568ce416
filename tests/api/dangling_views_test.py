#!/usr/bin/env python3
"""A view taken from a temporary Model (or ModelSummary) would read a closed model: it must not
compile. Each misuse below is compiled alone against the public headers and must fail on a
deleted function; a control doing the same through a named model must compile, so that a
failure is the API's and not the command's. The snippets compile side by side.

Usage: dangling_views_test.py --include DIR [--include DIR ...] -- COMPILER [ARGS...]
"""

import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile

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
    source = os.path.join(folder, name.replace(" ", "_").replace("'", "") + ".cpp")
    with open(source, "w") as f:
        f.write(PRELUDE + body + "\n}\n")
    args = command + ["-std=c++20", "-fsyntax-only"]
    args += [f"-I{d}" for d in includes] + [source]
    return subprocess.run(args, capture_output=True, text=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--include", action="append", default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
            control = pool.submit(compile_snippet, command, args.include, CONTROL, folder,
                                  "control")
            misuses = {name: pool.submit(compile_snippet, command, args.include, body, folder,
                                         name)
                       for name, body in MISUSES.items()}
        control = control.result()
        if control.returncode != 0:
            print(f"the control does not compile:\n{control.stderr}")
            return 1
        for name, future in misuses.items():
            result = future.result()
            if result.returncode == 0:
                failures.append(f"{name}: compiles, and the view would dangle")
            elif "delete" not in result.stderr:
                failures.append(f"{name}: fails, but not on a deleted function:\n{result.stderr}")
            else:
                print(f"ok: {name} does not compile")
    for failure in failures:
        print(f"FAIL {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
