"""What the tests of tests/api/ share: `compile_public`, which compiles C++ source against the
public headers only, as a user's project would (syntax only).

ONNXMAP_CXX is the compiler command as a JSON list, ONNXMAP_INCLUDE the include folders,
separated by os.pathsep (tests/meson.build sets both).
"""
import json
import os
import subprocess

import pytest


@pytest.fixture(scope="session")
def compile_public():
    """A function: compile_public(path, *flags) -> the compiler's CompletedProcess."""
    if not os.environ.get("ONNXMAP_CXX"):
        pytest.fail("ONNXMAP_CXX is not set: the compiler command as a JSON list "
                    "(tests/meson.build sets it)", pytrace=False)
    command = json.loads(os.environ["ONNXMAP_CXX"])
    includes = [d for d in os.environ.get("ONNXMAP_INCLUDE", "").split(os.pathsep) if d]

    def run(path, *flags):
        args = command + ["-std=c++20", "-fsyntax-only", *flags]
        args += [f"-I{d}" for d in includes] + [str(path)]
        return subprocess.run(args, capture_output=True, text=True)

    return run
