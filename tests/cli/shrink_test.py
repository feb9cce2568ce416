"""A model whose data file is halved while onnxmap runs: every verb that reads payloads (stats,
get, diff, load in each mode) ends with exit 1 (diff: 2, its "trouble") and one line naming the
file and saying that it shrank, never a signal (exit 135, SIGBUS); the viewer answers an error
for the values of a tensor past the new end, and its other pages go on.

"Mid-run": the command stops itself just after it maps the file (cli/stop_after_map.cpp,
preloaded), the file is cut, and the command goes on (SIGCONT): each read of the mapping meets
the cut, on a quiet machine or a loaded one."""
import os
import pathlib
import signal
import subprocess
import time

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper, save_model

from viewer import HttpError, Viewer

TENSORS = 8
FLOATS = 1 << 21  # 8 MiB a tensor: 64 MiB of data, far more than the half that is kept


def write_model(folder, name="m.onnx"):
    """A model of TENSORS FLOAT tensors "t0".. in one external data file; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    tensors = [numpy_helper.from_array(rng.standard_normal(FLOATS, dtype=np.float32), f"t{i}")
               for i in range(TENSORS)]
    model = helper.make_model(helper.make_graph([], "g", [], [], initializer=tensors))
    path = folder / name
    save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
               location=name + ".data", size_threshold=0)
    return path


def halve(path):
    os.truncate(path, path.stat().st_size // 2)


def process_state(pid):
    """The state letter of /proc/PID/stat (T: stopped, Z: ended), or None once reaped."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat[stat.rindex(")") + 2]


def run_halving(command, data, cut=halve):
    """Runs `command`, halves `data` (or calls `cut` on it) once the command has mapped it, and
    returns the finished process's (exit code, stdout, stderr)."""
    preload = os.environ.get("ONNXMAP_STOP_AFTER_MAP_PRELOAD")
    assert preload, "ONNXMAP_STOP_AFTER_MAP_PRELOAD is unset: run this file with meson test"
    env = dict(os.environ, LD_PRELOAD=preload, ONNXMAP_STOP_AFTER_MAPPING=str(data.resolve()))
    process = subprocess.Popen([str(c) for c in command], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while process_state(process.pid) != "T":
        assert process.poll() is None, f"{command} ended before it mapped {data}"
        assert time.monotonic() < deadline, f"{command} never mapped {data}"
        time.sleep(0.001)
    try:
        cut(data)
    finally:
        process.send_signal(signal.SIGCONT)
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err.decode()


def expect_shrank(code, err, data, status=1):
    assert code == status, f"exit {code} (135 is SIGBUS): {err}"
    assert err.count("\n") == 1, err
    assert data.name in err and "shrink" in err, err


@pytest.mark.parametrize("verb", [
    ["stats"],
    ["stats", "--json", "--threads", "1"],
    ["get", "{model}", "t7", "-o", "{out}"],
    ["get", "--raw", "{out}", "{model}", "t7"],
    ["get", "--rows", "0:1000000", "-o", "{out}", "{model}", "t7"],
    ["load"],
    ["load", "--mode", "map"],
    ["load", "--mode", "direct"],
], ids=lambda verb: "-".join(v.strip("{}-") for v in verb))
def test_a_verb_ends_in_an_error_when_the_data_shrinks(onnxmap, tmp_path, verb):
    model = write_model(tmp_path)
    out = tmp_path / "out.npy"
    args = [a.format(model=model, out=out) for a in verb]
    if "{model}" not in verb:
        args.append(str(model))
    code, _, err = run_halving([onnxmap, *args], model.with_name("m.onnx.data"))
    expect_shrank(code, err, model.with_name("m.onnx.data"))
    assert not out.exists()


def test_diff_ends_in_an_error_when_the_second_models_data_shrinks(onnxmap, tmp_path):
    a = write_model(tmp_path / "a")
    b = write_model(tmp_path / "b")
    # b's bytes are read through its map (a's by the loader): the guarded path.
    code, _, err = run_halving([onnxmap, "diff", a, b], b.with_name("m.onnx.data"))
    expect_shrank(code, err, b.with_name("m.onnx.data"), status=2)  # diff(1)'s "trouble"


def test_the_viewer_answers_an_error_for_lost_values_and_goes_on(onnxmap, tmp_path):
    model = write_model(tmp_path)
    data = model.with_name("m.onnx.data")
    with Viewer(onnxmap, model) as viewer:
        before = viewer.get("/api/values", name="t0", count=4)
        halve(data)
        for path, query in (("/api/values", {"name": "t7", "count": 64}),
                            ("/api/heatmap", {"name": "t6", "width": 16, "height": 1})):
            with pytest.raises(HttpError) as lost:
                viewer.get(path, **query)
            assert lost.value.status == 500
            message = lost.value.body.decode()
            assert "m.onnx.data" in message and "shrink" in message, message
        # A statistics job over lost bytes fails; the server does not.
        job = viewer.get("/api/stats", method="POST", name="t7")["job"]
        for _ in range(600):
            state = viewer.get("/api/stats", job=job)
            if state["state"] != "running":
                break
            time.sleep(0.05)
        assert state["state"] == "failed", state
        assert "shrink" in state["error"], state
        # The other pages go on: the summary, and a tensor whose bytes are still there.
        assert viewer.get("/api/summary")["tensors"] == TENSORS
        assert viewer.get("/api/values", name="t0", count=4) == before
        assert viewer.process.poll() is None
        assert viewer.stop() == 0
