"""The package installed as the README says, then opening a model from outside the source tree.
Under Debian's Python: `pip install .` from a clean copy of the sources, offline, in a venv of
/usr/bin/python3 made with --system-site-packages, with --no-build-isolation. In PyPI's run
(wheel_suite.py, ONNXMAP_WHEEL): the wheel `pip wheel .` made there, installed into a new plain
venv, NumPy coming from PyPI as its metadata asks."""
import os
import shutil
import subprocess
import sys

from conftest import SOURCE_ROOT


def copy_sources(destination):
    """The files git knows (committed or not, ignored ones left out), or the tree without builds."""
    listed = subprocess.run(["git", "-C", str(SOURCE_ROOT), "ls-files", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, text=True)
    if listed.returncode != 0:
        shutil.copytree(SOURCE_ROOT, destination,
                        ignore=shutil.ignore_patterns("build*", ".git", "__pycache__"))
        return
    for name in listed.stdout.splitlines():
        source = SOURCE_ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


SMOKE = ("import onnxmap, sys\n"
         "with onnxmap.open(sys.argv[1]) as m:\n"
         "    a = m['w1'].numpy()\n"
         "    assert a.shape == (64, 32) and a.strides == (128, 4), a.strides\n"
         "print('ok')\n")


def assert_installed_package_runs(python, venv, fixtures, env, cwd):
    site = subprocess.run([str(python), "-c", "import onnxmap, sys; print(onnxmap.__file__)"],
                          capture_output=True, text=True, env=env, cwd=cwd, check=True)
    assert str(venv) in site.stdout  # the installed package, not the build folder
    files = subprocess.run([str(python), "-m", "pip", "show", "-f", "onnxmap"],
                           capture_output=True, text=True, env=env, check=True).stdout
    assert "onnxmap/_onnxmap" in files and "bin/onnxmap" not in files  # the package alone
    assert "onnxmap/_onnxmap.pyi" in files and "onnxmap/py.typed" in files  # typed
    run = subprocess.run([str(python), "-c", SMOKE, str(fixtures / "external_one_file.onnx")],
                         capture_output=True, text=True, env=env, cwd=cwd)
    assert run.stdout.strip() == "ok", run.stderr


def test_the_package_installs_as_the_readme_says(tmp_path, fixtures):
    """Each run tests the install of its own environment (the module's docstring)."""
    if os.environ.get("ONNXMAP_WHEEL"):
        the_wheel_installs_into_a_new_venv(tmp_path, fixtures)
    else:
        debian_pip_install_in_a_venv(tmp_path, fixtures)


def the_wheel_installs_into_a_new_venv(tmp_path, fixtures):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # NumPy as the wheel's metadata asks, at the version the suite pins.
    install = subprocess.run([str(python), "-m", "pip", "install", "-q",
                              "--disable-pip-version-check", "-c",
                              str(SOURCE_ROOT / "tools" / "venvs" / "pypi.txt"),
                              os.environ["ONNXMAP_WHEEL"]],
                             capture_output=True, text=True, env=env, timeout=600)
    assert install.returncode == 0, install.stdout + install.stderr
    assert_installed_package_runs(python, venv, fixtures, env, tmp_path)


def debian_pip_install_in_a_venv(tmp_path, fixtures):
    sources = tmp_path / "src"
    copy_sources(sources)
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # ccache (on PATH, found by meson) hits across runs although each run copies to a new folder.
    env.update(CCACHE_BASEDIR=str(tmp_path), CCACHE_NOHASHDIR="1")
    # Unoptimized: the test is about the packaging, and -O2 would double its build time.
    install = subprocess.run([str(python), "-m", "pip", "install", "--no-index",
                              "--no-build-isolation", "-q",
                              "--config-settings=setup-args=-Doptimization=0", str(sources)],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=1800)
    assert install.returncode == 0, install.stdout + install.stderr
    assert_installed_package_runs(python, venv, fixtures, env, tmp_path)
