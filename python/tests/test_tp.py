"""examples/python/tp_load.py on a real distributed engine: torch.distributed with gloo, N
processes on loopback, each loading its row shard of every 2-D weight with get_slice, or with
load_to_torch into device memory (cpu here: the host engine; cuda on a GPU machine)."""
import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from conftest import SOURCE_ROOT

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def llm_like(tmp_path_factory):
    """About 24 MB of float16 and float32 weights (some with rows not divisible by 3), a bias and
    a scalar that are not sharded."""
    rng = np.random.default_rng(11)
    tensors = [numpy_helper.from_array(rng.standard_normal((1536, 1024)).astype(np.float16), f"layer{i}.w")
               for i in range(6)]
    tensors.append(numpy_helper.from_array(rng.standard_normal((1001, 768)).astype(np.float32), "head.w"))
    tensors.append(numpy_helper.from_array(np.ones(1024, np.float32), "head.bias"))
    path = tmp_path_factory.mktemp("tp") / "llm.onnx"
    onnx.save(helper.make_model(helper.make_graph([], "g", [], [], initializer=tensors)), str(path))
    return path


@pytest.mark.parametrize("world_size,device", [(2, None), (3, None), (3, "cpu")])
def test_tp_shards_gather_to_the_full_tensors(llm_like, world_size, device):
    run = subprocess.run([sys.executable, str(SOURCE_ROOT / "examples/python/tp_load.py"),
                          str(llm_like), "--world-size", str(world_size), "--json"]
                         + ([] if device is None else ["--device", device]),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert summary["gathered_equal"] and summary["tensors"] == 7
    total = summary["total_bytes"]
    assert sum(r["loaded"] for r in summary["ranks"]) == total
    for rank in summary["ranks"]:
        assert rank["loaded"] <= total / world_size * 1.01
        # What the rank read of the file: about its share, not the whole model.
        assert 0 < rank["read"] <= total / world_size * 1.1, rank
        assert rank["device"] == "cpu"
