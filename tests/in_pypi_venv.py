"""Runs `python ARGS...` with the interpreter of the PyPI environment that ONNXMAP_PYPI_VENV
names (tools/test.sh sets it to the folder tools/venv.sh pypi makes), for the tests whose judges
are PyPI's packages (torch's exporter, transformers, onnx-ir, ONNX Runtime); without it, says the
test is skipped and exits 77, meson's skip.

    in_pypi_venv.py ARGS...
"""
import os
import pathlib
import sys

venv = os.environ.get("ONNXMAP_PYPI_VENV", "")
if not venv:
    print("skipped: ONNXMAP_PYPI_VENV is not set (tools/test.sh sets it to the folder "
          "tools/venv.sh pypi makes)")
    sys.exit(77)
python = pathlib.Path(venv) / "bin" / "python"
os.execv(python, [str(python), *sys.argv[1:]])
