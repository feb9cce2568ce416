"""Installs onnxmap into a staging folder and uses it the way another project would.

Checks that the shared library exports only onnxmap's API, that the installed headers are the
public ones, and builds and runs the two examples (examples/cmake-consumer through find_package,
examples/meson-consumer through pkg-config) and a plain compiler line from `pkg-config --cflags
--libs` (shared) and `--static` against the staged files only, the CMake example linked
statically too, and the Meson example with this source tree as its subproject. python3-onnx
writes the model they read and says what they must print.

tests/meson.build passes the build's folder, prefix, libdir and includedir as ONNXMAP_BUILD_ROOT,
ONNXMAP_PREFIX, ONNXMAP_LIBDIR and ONNXMAP_INCLUDEDIR.
"""
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

SOURCE = str(pathlib.Path(__file__).resolve().parents[2])


def run(cmd, env=None, cwd=None):
    """The command's stdout; fails the case, with its output, where it fails."""
    result = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(cmd)}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def clean_env(stage_lib):
    """The environment of a consumer: nothing from onnxmap's build tree on any path."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "PKG_CONFIG_PATH", "CMAKE_PREFIX_PATH", "CPATH",
                        "LIBRARY_PATH", "MESON_SOURCE_ROOT", "MESON_BUILD_ROOT")}
    env["LD_LIBRARY_PATH"] = stage_lib
    env["PKG_CONFIG_PATH"] = os.path.join(stage_lib, "pkgconfig")
    return env


def write_model(path):
    w = np.arange(6, dtype=np.float32).reshape(2, 3) * 1.5
    ids = np.array([3, -1, 70000], dtype=np.int64)
    ids_tensor = helper.make_tensor("ids", TensorProto.INT64, [3], ids.tolist())  # int64_data
    graph = helper.make_graph(
        [helper.make_node("Gather", ["w", "ids"], ["y"])], "g", [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), ids_tensor])
    model = helper.make_model(graph, producer_name="consumer-test",
                              opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.save(model, path)
    loaded = onnx.load(path)
    expected = {}
    for name in ("w", "ids"):
        init = next(t for t in loaded.graph.initializer if t.name == name)
        array = numpy_helper.to_array(init)
        raw = array.astype(array.dtype.newbyteorder("<")).tobytes()
        expected[name] = (
            f"tensor {name} {TensorProto.DataType.Name(init.data_type)} "
            + " ".join(str(d) for d in init.dims)
            + f"\nbytes {len(raw)} sum {sum(raw)}\n")
    header = (f"ir_version {loaded.ir_version}\nproducer {loaded.producer_name}\n"
              + "".join(f"opset '{o.domain}' {o.version}\n" for o in loaded.opset_import)
              + f"tensors {len(loaded.graph.initializer)}\n")
    return header, expected


class Stage:
    """The install staged with meson install --destdir, and the model the consumers read."""

    def __init__(self, work):
        build = os.environ["ONNXMAP_BUILD_ROOT"]
        self.work = work
        stage = os.path.join(work, "stage")
        run(["meson", "install", "-C", build, "--no-rebuild", "--quiet", "--destdir", stage])
        self.prefix = stage + os.environ["ONNXMAP_PREFIX"]
        self.lib = os.path.join(self.prefix, os.environ["ONNXMAP_LIBDIR"])
        self.include = os.path.join(self.prefix, os.environ["ONNXMAP_INCLUDEDIR"])
        self.env = clean_env(self.lib)
        self.model = os.path.join(work, "model.onnx")
        self.header, self.expected = write_model(self.model)

    def check_consumer(self, program, env=None, staged=True):
        """The program prints the version line, then what python3-onnx says of each tensor;
        a shared link resolves libonnxmap into the stage."""
        env = env or self.env
        for name, tail in self.expected.items():
            out = run([program, self.model, name], env=env)
            lines = out.splitlines(keepends=True)
            assert lines and lines[0].startswith("onnxmap "), f"no version line:\n{out}"
            assert "".join(lines[1:]) == self.header + tail, \
                f"{name}: printed\n{''.join(lines[1:])}expected\n{self.header}{tail}"
        linked = run(["ldd", program], env=env)
        line = next((l for l in linked.splitlines() if "libonnxmap" in l), "")
        if staged and line and env["LD_LIBRARY_PATH"] not in line and "not found" not in line:
            # A shared link must resolve into the staging folder, never the build tree.
            resolved = line.split("=>")[-1].strip()
            assert os.path.realpath(resolved).startswith(
                os.path.realpath(env["LD_LIBRARY_PATH"])), \
                f"it resolves libonnxmap outside the stage: {line}"

    def check_static(self, program):
        assert "libonnxmap" not in run(["ldd", program], env=self.env), \
            "the static link still needs libonnxmap.so"
        self.check_consumer(program)


@pytest.fixture(scope="module")
def stage():
    for name in ("ONNXMAP_BUILD_ROOT", "ONNXMAP_PREFIX", "ONNXMAP_LIBDIR", "ONNXMAP_INCLUDEDIR"):
        if not os.environ.get(name):
            pytest.fail(f"{name} is not set (tests/meson.build sets it)", pytrace=False)
    work = tempfile.mkdtemp(prefix="onnxmap-install-", dir=os.environ["ONNXMAP_BUILD_ROOT"])
    try:
        yield Stage(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_exports_only_the_api(stage):
    shared = os.path.join(stage.lib, "libonnxmap.so")
    soname = re.search(r"SONAME\s+(\S+)", run(["objdump", "-p", shared]))
    assert soname and re.fullmatch(r"libonnxmap\.so\.\d+", soname.group(1)), \
        f"libonnxmap.so has no versioned SONAME ({soname and soname.group(1)})"
    symbols = run(["nm", "-D", "--defined-only", "-C", shared]).splitlines()
    api = re.compile(r"^(?:(?:typeinfo name|typeinfo|vtable|VTT) for )?onnxmap::")
    stray = []
    for line in symbols:
        parts = line.split(" ", 2)
        if len(parts) < 3 or parts[1] in ("A",):  # version nodes
            continue
        if not api.match(parts[2]):
            stray.append(parts[2])
    assert not stray, "the shared library exports non-API symbols:\n  " + "\n  ".join(stray)
    assert any("onnxmap::Model::open" in s for s in symbols), \
        "onnxmap::Model::open is not exported"


def test_installed_headers(stage):
    """Only the standard library and onnxmap's own installed headers: never Boost, never a
    header of the library's layers (lib/)."""
    for root, _, names in os.walk(os.path.join(stage.include, "onnxmap")):
        for name in names:
            text = open(os.path.join(root, name), encoding="utf-8").read()
            internal = re.search(r'#include\s*"(?!onnxmap/)', text)
            assert not re.search(r"#include\s*<boost/", text) and not internal, \
                f"installed header {name} includes Boost or a library internal"


def test_cmake_find_package(stage):
    build = os.path.join(stage.work, "cmake")
    run(["cmake", "-S", os.path.join(SOURCE, "examples", "cmake-consumer"), "-B", build,
         f"-DCMAKE_PREFIX_PATH={stage.prefix}", "-DCMAKE_BUILD_TYPE=Release"], env=stage.env)
    run(["cmake", "--build", build], env=stage.env)
    stage.check_consumer(os.path.join(build, "consumer"))


def test_cmake_find_package_static(stage):
    build = os.path.join(stage.work, "cmake-static")
    run(["cmake", "-S", os.path.join(SOURCE, "examples", "cmake-consumer"), "-B", build,
         f"-DCMAKE_PREFIX_PATH={stage.prefix}", "-DCMAKE_BUILD_TYPE=Release",
         "-DONNXMAP_STATIC=ON"], env=stage.env)
    run(["cmake", "--build", build], env=stage.env)
    stage.check_static(os.path.join(build, "consumer"))


def test_meson_dependency(stage):
    build = os.path.join(stage.work, "meson")
    run(["meson", "setup", build, os.path.join(SOURCE, "examples", "meson-consumer")],
        env=stage.env)
    run(["ninja", "-C", build], env=stage.env)
    stage.check_consumer(os.path.join(build, "consumer"))


@pytest.fixture(scope="module")
def main_object(stage):
    """The CMake example's main.cpp compiled with `pkg-config --cflags onnxmap`."""
    obj = os.path.join(stage.work, "main.o")
    cflags = run(["pkg-config", "--cflags", "onnxmap"], env=stage.env).split()
    run(["c++", "-std=c++20", "-O1", *cflags, "-c",
         os.path.join(SOURCE, "examples", "cmake-consumer", "main.cpp"), "-o", obj],
        env=stage.env)
    return obj


def test_pkg_config_shared(stage, main_object):
    app = os.path.join(stage.work, "app-shared")
    run(["c++", main_object, "-o", app,
         *run(["pkg-config", "--libs", "onnxmap"], env=stage.env).split()], env=stage.env)
    stage.check_consumer(app)


def test_pkg_config_static(stage, main_object):
    app = os.path.join(stage.work, "app-static")
    libs = run(["pkg-config", "--static", "--libs", "onnxmap"], env=stage.env).split()
    libs = [f if f != "-lonnxmap" else os.path.join(stage.lib, "libonnxmap.a") for f in libs]
    run(["c++", main_object, "-o", app, *libs], env=stage.env)
    stage.check_static(app)


def test_meson_subproject(stage):
    """The Meson example with this source tree as its subproject: dependency('onnxmap') falls
    back to it (meson.override_dependency), nothing installed anywhere."""
    project = os.path.join(stage.work, "subproject-consumer")
    shutil.copytree(os.path.join(SOURCE, "examples", "meson-consumer"), project)
    os.mkdir(os.path.join(project, "subprojects"))
    os.symlink(SOURCE, os.path.join(project, "subprojects", "onnxmap"))
    env = clean_env(os.path.join(stage.work, "nothing-installed"))
    # ccache (on PATH, found by meson) hits across runs although each run has a new folder.
    env.update(CCACHE_BASEDIR=stage.work, CCACHE_NOHASHDIR="1")
    build = os.path.join(project, "build")
    # The library only, unoptimized: the consumer needs nothing else and it builds fastest.
    run(["meson", "setup", build, project, "--buildtype=debug", "--wrap-mode=nodownload",
         "-Donnxmap:tests=disabled", "-Donnxmap:bench=disabled", "-Donnxmap:python=disabled",
         "-Donnxmap:cli=false", "-Donnxmap:library_install=false"], env=env)
    run(["ninja", "-C", build, "consumer"], env=env)
    stage.check_consumer(os.path.join(build, "consumer"), env=env, staged=False)
