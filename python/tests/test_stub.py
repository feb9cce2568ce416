"""The type stub shipped with the package (onnxmap/_onnxmap.pyi, with py.typed) says what the
extension module has: mypy's stubtest compares the two, every class, method and property."""
import os
import pathlib
import site
import subprocess
import sys

import onnxmap
from conftest import once

ALLOWLIST = pathlib.Path(__file__).parent / "stubtest-allowlist.txt"


def test_stub_ships_beside_the_module():
    package = pathlib.Path(onnxmap.__file__).parent
    assert (package / "_onnxmap.pyi").is_file()
    assert (package / "py.typed").is_file()


@once
def test_stub_matches_the_module(tmp_path):
    root = pathlib.Path(onnxmap.__file__).parent.parent
    env = dict(os.environ)
    # A build folder or pip's --target folder goes on mypy's path; mypy refuses a site-packages
    # there, and finds the package installed in one by itself.
    if str(root) not in site.getsitepackages():
        env["MYPYPATH"] = str(root)
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "onnxmap", "--allowlist", str(ALLOWLIST),
         "--concise"], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
