"""peek, check, save and convert, judged by python3-onnx."""
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxmap
from conftest import SOURCE_ROOT, judge_array

sys.path.insert(0, str(SOURCE_ROOT / "tests" / "interop"))
from interop_test import checker_verdict  # noqa: E402  (onnx.checker's message, or None)


def tensors_of(path):
    model = onnx.load(str(path))
    return {t.name: judge_array(t, str(path.parent)) for t in model.graph.initializer}


def assert_same_tensors(a, b):
    assert a.keys() == b.keys()
    for name in a:
        if a[name] is not None:
            assert a[name].tobytes() == b[name].tobytes(), name


def test_save_unchanged_is_byte_for_byte(fixtures, tmp_path):
    source = fixtures / "features.onnx"
    with onnxmap.open(source) as model:
        result = onnxmap.save(model, tmp_path / "copy.onnx")
    assert (tmp_path / "copy.onnx").read_bytes() == source.read_bytes()
    assert result["model_bytes"] == source.stat().st_size


def test_save_external_and_back(fixtures, tmp_path):
    source = fixtures / "all_dtypes.onnx"
    calls = []
    with onnxmap.open(source) as model:
        result = onnxmap.save(model, tmp_path / "ext.onnx", external_data=True,
                              location="weights/ext.data", size_threshold=0, align=64,
                              progress=lambda done, total: calls.append((done, total)))
    assert result["data_files"] == ["weights/ext.data"] and result["external_tensors"] > 0
    assert calls and calls[-1][0] == calls[-1][1]
    # onnx judges the copy with its external data as it judges the source: onnx 1.12 accepts the
    # fixture, later versions refuse its graph output that no node makes, and nothing else.
    assert checker_verdict(tmp_path / "ext.onnx") == checker_verdict(source)
    assert_same_tensors(tensors_of(source), tensors_of(tmp_path / "ext.onnx"))
    result = onnxmap.convert(tmp_path / "ext.onnx", tmp_path / "inline.onnx", external_data=False)
    assert result["data_files"] == []
    assert_same_tensors(tensors_of(source), tensors_of(tmp_path / "inline.onnx"))


def test_convert_keeps_layout_by_default(fixtures, tmp_path):
    result = onnxmap.convert(fixtures / "external_one_file.onnx", tmp_path / "out.onnx",
                             max_external_file_size=9000, mode="read")
    assert len(result["data_files"]) == 3  # 8 KiB tensors, one per file under the cap
    assert_same_tensors(tensors_of(fixtures / "external_one_file.onnx"),
                        tensors_of(tmp_path / "out.onnx"))


def test_save_refuses_unsafe_destinations(fixtures, tmp_path):
    with onnxmap.open(fixtures / "all_dtypes.onnx") as model:
        error = pytest.raises(onnxmap.Error, onnxmap.save, model, fixtures / "all_dtypes.onnx")
        assert error.value.kind == "unsafe_path"
        error = pytest.raises(onnxmap.Error, onnxmap.save, model, tmp_path / "x.onnx",
                              external_data=True, location="../out.data")
        assert error.value.kind == "unsafe_path"
        assert not (tmp_path / "x.onnx").exists()
        with pytest.raises(TypeError):
            onnxmap.save(model, tmp_path / "y.onnx", colour="blue")


def test_check_lists_problems(tmp_path):
    graph = helper.make_graph([helper.make_node("Relu", ["missing"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    onnx.save(helper.make_model(graph), str(tmp_path / "bad.onnx"))
    problems = onnxmap.check(tmp_path / "bad.onnx")
    assert [p.kind for p in problems] == ["undefined_input"]
    assert problems[0].path == "graph.node[0].input[0]" and "missing" in str(problems[0])
    (tmp_path / "broken.onnx").write_bytes(b"\x3a\x7f\x00")
    problems = onnxmap.check(tmp_path / "broken.onnx")
    assert [p.kind for p in problems] == ["structure"]


def test_check_reads_external_data(fixtures, tmp_path):
    path = fixtures / "external_one_file.onnx"
    # The fixture's graph output "y" is defined by nothing: the one problem, with or without data.
    expected = ["undefined_output"]
    assert [p.kind for p in onnxmap.check(path)] == expected
    assert [p.kind for p in onnxmap.check(path, read_data=True)] == expected
    (tmp_path / "cut.onnx").write_bytes(path.read_bytes())
    (tmp_path / "external_one_file.data").write_bytes(b"\0" * 100)
    kinds = [p.kind for p in onnxmap.check(tmp_path / "cut.onnx")]
    assert "external_data" in kinds


def test_peek(fixtures):
    summary = onnxmap.peek(fixtures / "features.onnx")
    assert summary.producer_name == "fixtures" and summary.graph_name == "control_flow"
    assert summary.metadata_props == {"author": "onnxmap", "empty": ""}
    assert summary.opset_imports == {"": 17, "test.domain": 1}
    assert [(i.name, i.shape) for i in summary.inputs] == [("x", ("N", 3))]
