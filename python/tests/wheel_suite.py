"""The Python suite a second time, where users are: run by the interpreter of the PyPI
environment (tests/in_pypi_venv.py starts it: NumPy 2, torch, onnx, ONNX Runtime of
tools/venvs/pypi.txt), over the package as `pip wheel .` builds it with build isolation
(meson-python, meson, ninja and pybind11 from PyPI, as pyproject.toml pins them), the wheel
installed into a folder of its own.

    wheel_suite.py WORK_FOLDER PYTEST_ARGS...

The test fails if the wheel's extension was built with a pybind11 older than 2.12 (which would
read NumPy 2's arrays wrong)."""
import os
import pathlib
import shutil
import subprocess
import sys

SOURCE_ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(command, **kwargs):
    """Runs `command`; its output is shown only when it fails, and ends this script."""
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, command))} failed ({done.returncode}):\n"
                 f"{done.stdout}{done.stderr}")


def built_wheel(python, work):
    """The wheel `pip wheel .` makes of the sources, in work/wheel."""
    wheels = work / "wheel"
    shutil.rmtree(wheels, ignore_errors=True)
    # A new meson build each time: one kept between runs would still name the isolated
    # environment of the run that configured it (gone since), and find Debian's pybind11 2.10.
    # ccache (on PATH, found by meson) keeps the compiles: meson-python builds in a new folder
    # of the sources each time, the same paths below the base.
    # The build's own packages pinned (pip applies PIP_CONSTRAINT to the isolated environment).
    env = dict(os.environ, CCACHE_BASEDIR=str(SOURCE_ROOT), CCACHE_NOHASHDIR="1",
               PIP_CONSTRAINT=str(SOURCE_ROOT / "tools" / "venvs" / "build.txt"))
    run([python, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q",
         "-w", wheels, SOURCE_ROOT], env=env)
    found = sorted(wheels.glob("onnxmap-*.whl"))
    if len(found) != 1:
        sys.exit(f"pip wheel made {[p.name for p in found]}, not one onnxmap wheel")
    return found[0]


def main():
    work = pathlib.Path(sys.argv[1]).resolve()
    python = sys.executable
    wheel = built_wheel(python, work)
    site = work / "site"
    shutil.rmtree(site, ignore_errors=True)
    run([python, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check", "-q",
         "--target", site, wheel])
    env = dict(os.environ, PYTHONPATH=str(site), ONNXMAP_WHEEL=str(wheel))
    # The suite would only say "built with pybind11 2.10" at every import: say it once, here.
    run([python, "-c", "import onnxmap"], env=env)
    return subprocess.run([python, "-m", "pytest", *sys.argv[2:]], env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
