"""The README's "Python first steps" example runs as written, on a model made here."""
import re

import numpy as np
import onnx
from onnx import helper, numpy_helper

from conftest import SOURCE_ROOT


def readme_example():
    text = (SOURCE_ROOT / "README.md").read_text()
    section = text[text.index("### Python first steps"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_example_runs(tmp_path, monkeypatch, capsys):
    embed = np.arange(32 * 8, dtype=np.float16).reshape(32, 8)
    tensors = [numpy_helper.from_array(embed, "embed.weight")]
    graph = helper.make_graph([helper.make_node("Gather", ["embed.weight", "ids"], ["y"])], "g",
                              [helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, ["n"])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT16, None)],
                              initializer=tensors)
    onnx.save(helper.make_model(graph, producer_name="readme"), str(tmp_path / "model.onnx"))
    monkeypatch.chdir(tmp_path)
    exec(compile(readme_example(), "README.md", "exec"), {})
    assert "embed.weight FLOAT16 (32, 8)" in capsys.readouterr().out
