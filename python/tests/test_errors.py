"""Errors: onnxmap.Error is a ValueError with kind, file, path, offset and the C++ message; hostile
files are refused from Python exactly as the C++ command refuses them."""
import importlib.util
import os
import pathlib
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxmap
from conftest import ONNXMAP_EXE, SOURCE_ROOT


def load_robustness():
    """The hostile files of the C++ command's robustness test, so both see the same inputs."""
    spec = importlib.util.spec_from_file_location(
        "robustness_test", SOURCE_ROOT / "tests" / "cli" / "robustness_test.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ROBUSTNESS = load_robustness()


def raised(call):
    with pytest.raises(onnxmap.Error) as info:
        call()
    error = info.value
    assert isinstance(error, ValueError)
    return error


@pytest.mark.parametrize("name", ["eleven-byte-varint", "wire-type-7", "field-number-0",
                                  "open-group", "length-past-end", "nested-100000",
                                  "negative-dims", "external-escape"])
@pytest.mark.parametrize("load", ["map", "read"])
def test_hostile_files_refused_as_in_cpp(tmp_path, name, load):
    content, expected = ROBUSTNESS.hostile_files(tmp_path)[name]
    models = tmp_path / "models"
    models.mkdir()
    path = models / f"{name}.onnx"
    path.write_bytes(content)
    error = raised(lambda: onnxmap.open(path, mode=load))
    assert expected in str(error) and str(path) in str(error)
    assert error.file == str(path)
    if ONNXMAP_EXE:
        args = [ONNXMAP_EXE, "ls", str(path)] + (["--no-mmap"] if load == "read" else [])
        run = subprocess.run(args, capture_output=True, text=True)
        assert run.returncode == 1
        assert str(error) in run.stderr  # the same message, word for word


def write_model(path, initializers, **kw):
    graph = helper.make_graph([], "g", [], [], initializer=initializers)
    onnx.save(helper.make_model(graph, **kw), str(path))


def test_every_error_kind(tmp_path):
    kinds = {}
    (tmp_path / "varint.onnx").write_bytes(b"\x08" + b"\xff" * 10 + b"\x01")
    kinds["bad_varint"] = lambda: onnxmap.open(tmp_path / "varint.onnx")
    (tmp_path / "short.onnx").write_bytes(b"\x08")
    kinds["truncated"] = lambda: onnxmap.open(tmp_path / "short.onnx")
    (tmp_path / "wire.onnx").write_bytes(b"\x3a\x02\x27\x00")
    kinds["bad_wire_type"] = lambda: onnxmap.open(tmp_path / "wire.onnx")
    (tmp_path / "field0.onnx").write_bytes(b"\x3a\x02\x02\x00")
    kinds["bad_field_number"] = lambda: onnxmap.open(tmp_path / "field0.onnx")
    (tmp_path / "past.onnx").write_bytes(b"\x3a\x7f\x00")
    kinds["out_of_bounds"] = lambda: onnxmap.open(tmp_path / "past.onnx")
    (tmp_path / "deep.onnx").write_bytes(ROBUSTNESS.deep_graphs(100))
    kinds["depth_limit"] = lambda: onnxmap.open(tmp_path / "deep.onnx")
    write_model(tmp_path / "two.onnx", [numpy_helper.from_array(np.ones(2, np.float32), f"w{i}")
                                        for i in range(2)])
    kinds["limit_exceeded"] = lambda: onnxmap.open(tmp_path / "two.onnx", max_tensors=1)
    bad = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], raw_data=b"\0" * 12)
    write_model(tmp_path / "bad.onnx", [bad])
    kinds["bad_tensor"] = lambda: onnxmap.open(tmp_path / "bad.onnx")
    escape = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4],
                         data_location=TensorProto.EXTERNAL)
    escape.external_data.add(key="location", value="/etc/passwd")
    write_model(tmp_path / "escape.onnx", [escape])
    kinds["unsafe_path"] = lambda: onnxmap.open(tmp_path / "escape.onnx")
    kinds["not_found"] = lambda: onnxmap.open(tmp_path / "two.onnx").tensor("nope")
    kinds["io"] = lambda: onnxmap.open(tmp_path / "missing.onnx")
    kinds["invalid_argument"] = lambda: onnxmap.open(tmp_path / "two.onnx", max_depth=0)
    (tmp_path / "no_graph_tensor.onnx").write_bytes(b"\x3a\x03\x0a\x01\x00")
    for kind, call in kinds.items():
        error = raised(call)
        assert error.kind == kind, f"{kind}: {error.kind}: {error}"
        assert error.detail and error.detail in str(error)
    # Where the error is in the file: its field path and byte offset.
    error = raised(kinds["bad_tensor"])
    assert error.path == "graph.initializer[0].raw_data" and isinstance(error.offset, int)
    assert raised(kinds["io"]).offset is None


def test_bad_load_and_options(tmp_path):
    write_model(tmp_path / "ok.onnx", [])
    error = raised(lambda: onnxmap.open(tmp_path / "ok.onnx", mode="telepathy"))
    assert error.kind == "invalid_argument" and "telepathy" in str(error)
    with pytest.raises(TypeError):
        onnxmap.open(tmp_path / "ok.onnx", not_an_option=1)


def test_collect_payload_errors(tmp_path):
    bad = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], raw_data=b"\0" * 12)
    write_model(tmp_path / "bad.onnx", [bad])
    with onnxmap.open(tmp_path / "bad.onnx", collect_payload_errors=True) as model:
        assert model["w"].storage == "invalid"
        assert raised(lambda: model["w"].numpy()).kind == "bad_tensor"


def test_truncations_never_crash(tmp_path):
    weights = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    graph = helper.make_graph([helper.make_node("Relu", ["w"], ["y"])], "g", [], [],
                              initializer=[weights])
    full = helper.make_model(graph).SerializeToString()
    path = tmp_path / "cut.onnx"
    for cut in range(len(full)):
        path.write_bytes(full[:cut])
        try:
            with onnxmap.open(path) as model:
                [model[n].numpy() for n in model.keys()]
        except onnxmap.Error:
            pass


def test_a_git_lfs_pointer_is_named(tmp_path):
    """A clone without Git LFS: open() of the pointer, and a load of a model whose data file is
    one, say so (tests/cli/not_what_they_claim_test.py: every verb)."""
    pointer = (b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"ab" * 32 +
               b"\nsize 123456\n")
    (tmp_path / "p.onnx").write_bytes(pointer)
    error = raised(lambda: onnxmap.open(tmp_path / "p.onnx"))
    assert error.kind == "io" and "Git LFS pointer to an object of 123456 bytes" in str(error)
    subprocess.run([ONNXMAP_EXE, "synth", tmp_path / "m.onnx", "--layers", "1", "--hidden", "64",
                    "--external-data"], check=True, capture_output=True)
    (tmp_path / "m.onnx.data").write_bytes(pointer)
    error = raised(lambda: onnxmap.open(tmp_path / "m.onnx"))
    assert "external data file 'm.onnx.data' is a Git LFS pointer" in str(error)
