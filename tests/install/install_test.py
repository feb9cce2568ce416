#!/usr/bin/env python3
"""Installs onnxmap into a staging folder and uses it the way another project would.

Run by meson test (tests/meson.build). It checks that the shared library exports only onnxmap's
API, that the installed headers are the public ones, and builds and runs the two examples
(examples/cmake-consumer through find_package, examples/meson-consumer through pkg-config) and
a plain compiler line from `pkg-config --cflags --libs` (shared) and `--static` against the
staged files only, the CMake example linked statically too, and the Meson example with this
source tree as its subproject. python3-onnx writes the model they read and says what they must
print.

  install_test.py SOURCE_ROOT BUILD_ROOT PREFIX LIBDIR INCLUDEDIR
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SOURCE, BUILD, PREFIX, LIBDIR, INCLUDEDIR = sys.argv[1:6]


def run(cmd, env=None, cwd=None):
    result = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{result.stdout}\n{result.stderr}")
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


def check_consumer(label, program, env, model, header, expected, staged=True):
    for name, tail in expected.items():
        out = run([program, model, name], env=env)
        lines = out.splitlines(keepends=True)
        if not lines or not lines[0].startswith("onnxmap "):
            sys.exit(f"FAILED: {label}: no version line:\n{out}")
        if "".join(lines[1:]) != header + tail:
            sys.exit(f"FAILED: {label} {name}: printed\n{''.join(lines[1:])}expected\n"
                     f"{header}{tail}")
    linked = run(["ldd", program], env=env)
    line = next((l for l in linked.splitlines() if "libonnxmap" in l), "")
    if staged and line and env["LD_LIBRARY_PATH"] not in line and "not found" not in line:
        # A shared link must resolve into the staging folder, never the build tree.
        resolved = line.split("=>")[-1].strip()
        if not os.path.realpath(resolved).startswith(os.path.realpath(env["LD_LIBRARY_PATH"])):
            sys.exit(f"FAILED: {label} resolves libonnxmap outside the stage: {line}")
    print(f"ok: {label}")


def check_static(label, program, env, model, header, expected):
    if "libonnxmap" in run(["ldd", program], env=env):
        sys.exit(f"FAILED: {label}: the static link still needs libonnxmap.so")
    check_consumer(label, program, env, model, header, expected)


def check_subproject(work, model, header, expected):
    """The Meson example with this source tree as its subproject: dependency('onnxmap') falls
    back to it (meson.override_dependency), nothing installed anywhere."""
    project = os.path.join(work, "subproject-consumer")
    shutil.copytree(os.path.join(SOURCE, "examples", "meson-consumer"), project)
    os.mkdir(os.path.join(project, "subprojects"))
    os.symlink(SOURCE, os.path.join(project, "subprojects", "onnxmap"))
    env = clean_env(os.path.join(work, "nothing-installed"))
    # ccache (on PATH, found by meson) hits across runs although each run has a new folder.
    env.update(CCACHE_BASEDIR=work, CCACHE_NOHASHDIR="1")
    build = os.path.join(project, "build")
    # The library only, unoptimized: the consumer needs nothing else and it builds fastest.
    run(["meson", "setup", build, project, "--buildtype=debug", "--wrap-mode=nodownload",
         "-Donnxmap:tests=disabled", "-Donnxmap:bench=disabled", "-Donnxmap:python=disabled",
         "-Donnxmap:cli=false", "-Donnxmap:library_install=false"], env=env)
    run(["ninja", "-C", build, "consumer"], env=env)
    check_consumer("meson subproject", os.path.join(build, "consumer"), env, model, header,
                   expected, staged=False)


def check_exports(shared):
    soname = re.search(r"SONAME\s+(\S+)", run(["objdump", "-p", shared]))
    if not soname or not re.fullmatch(r"libonnxmap\.so\.\d+", soname.group(1)):
        sys.exit(f"FAILED: libonnxmap.so has no versioned SONAME ({soname and soname.group(1)})")
    symbols = run(["nm", "-D", "--defined-only", "-C", shared]).splitlines()
    api = re.compile(r"^(?:(?:typeinfo name|typeinfo|vtable|VTT) for )?onnxmap::")
    stray = []
    for line in symbols:
        parts = line.split(" ", 2)
        if len(parts) < 3 or parts[1] in ("A",):  # version nodes
            continue
        if not api.match(parts[2]):
            stray.append(parts[2])
    if stray:
        sys.exit("FAILED: the shared library exports non-API symbols:\n  " + "\n  ".join(stray))
    if not any("onnxmap::Model::open" in s for s in symbols):
        sys.exit("FAILED: onnxmap::Model::open is not exported")
    print(f"ok: {len(symbols)} exported symbols, all onnxmap::")


def check_headers(include):
    for root, _, names in os.walk(include):
        for name in names:
            text = open(os.path.join(root, name), encoding="utf-8").read()
            # Only the standard library and onnxmap's own installed headers: never Boost, never
            # a header of the library's layers (lib/).
            internal = re.search(r'#include\s*"(?!onnxmap/)', text)
            if re.search(r"#include\s*<boost/", text) or internal:
                sys.exit(f"FAILED: installed header {name} includes Boost or a library internal")
    print("ok: installed headers")


def main():
    work = tempfile.mkdtemp(prefix="onnxmap-install-", dir=BUILD)
    try:
        stage = os.path.join(work, "stage")
        run(["meson", "install", "-C", BUILD, "--no-rebuild", "--quiet", "--destdir", stage])
        prefix = stage + PREFIX
        stage_lib = os.path.join(prefix, LIBDIR)
        include = os.path.join(prefix, INCLUDEDIR)
        env = clean_env(stage_lib)
        shared = os.path.join(stage_lib, "libonnxmap.so")
        check_exports(shared)
        check_headers(os.path.join(include, "onnxmap"))

        model = os.path.join(work, "model.onnx")
        header, expected = write_model(model)

        cmake_build = os.path.join(work, "cmake")
        run(["cmake", "-S", os.path.join(SOURCE, "examples", "cmake-consumer"), "-B", cmake_build,
             f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release"], env=env)
        run(["cmake", "--build", cmake_build], env=env)
        check_consumer("cmake find_package", os.path.join(cmake_build, "consumer"), env, model,
                       header, expected)

        cmake_static = os.path.join(work, "cmake-static")
        run(["cmake", "-S", os.path.join(SOURCE, "examples", "cmake-consumer"), "-B", cmake_static,
             f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release", "-DONNXMAP_STATIC=ON"],
            env=env)
        run(["cmake", "--build", cmake_static], env=env)
        check_static("cmake find_package static", os.path.join(cmake_static, "consumer"), env,
                     model, header, expected)

        meson_build = os.path.join(work, "meson")
        run(["meson", "setup", meson_build, os.path.join(SOURCE, "examples", "meson-consumer")],
            env=env)
        run(["ninja", "-C", meson_build], env=env)
        check_consumer("meson dependency", os.path.join(meson_build, "consumer"), env, model,
                       header, expected)

        # A plain compiler line: the object once, linked shared and static.
        obj = os.path.join(work, "main.o")
        cflags = run(["pkg-config", "--cflags", "onnxmap"], env=env).split()
        run(["c++", "-std=c++20", "-O1", *cflags, "-c",
             os.path.join(SOURCE, "examples", "cmake-consumer", "main.cpp"), "-o", obj], env=env)
        shared_app = os.path.join(work, "app-shared")
        run(["c++", obj, "-o", shared_app,
             *run(["pkg-config", "--libs", "onnxmap"], env=env).split()], env=env)
        check_consumer("pkg-config shared", shared_app, env, model, header, expected)
        static_app = os.path.join(work, "app-static")
        static_libs = run(["pkg-config", "--static", "--libs", "onnxmap"], env=env).split()
        static_libs = [f if f != "-lonnxmap" else os.path.join(stage_lib, "libonnxmap.a")
                       for f in static_libs]
        run(["c++", obj, "-o", static_app, *static_libs], env=env)
        check_static("pkg-config static", static_app, env, model, header, expected)
        check_subproject(work, model, header, expected)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
