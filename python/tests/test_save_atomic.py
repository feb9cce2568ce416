"""onnxmap.save and onnxmap.convert over an existing model are all-or-nothing: a write that fails
(a file size limit, as a full disk fails it) or a process killed mid-write leaves the old model and
its data byte for byte, or the new version whole, or no model; never a torn or temporary file
(tests/cli/write_faults.py states the promise and checks it)."""
import os
import subprocess
import sys

import pytest

from conftest import ONNXMAP_EXE, SOURCE_ROOT

sys.path.insert(0, str(SOURCE_ROOT / "tests" / "cli"))
from write_faults import assert_old_new_or_none, kill_mid_write, restore, snapshot  # noqa: E402

# Converts argv[1] to argv[2] with external data, under a file size limit of argv[3] bytes
# (0: none).
CONVERT = """
import resource, signal, sys
import onnxmap
if int(sys.argv[3]):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[3]), resource.RLIM_INFINITY))
with onnxmap.open(sys.argv[1]) as model:
    onnxmap.save(model, sys.argv[2], external_data=True)
"""


@pytest.fixture
def versions(tmp_path):
    """The destination folder with the old version in it, and snapshots of the old version and
    of the new one, saved with external data (the same data file name)."""
    if not ONNXMAP_EXE:
        pytest.fail("ONNXMAP_EXE is not set: the command writes the models")
    for name, layers in (("old.onnx", 1), ("new.onnx", 4)):
        subprocess.run([ONNXMAP_EXE, "synth", str(tmp_path / name), "--layers", str(layers),
                        "--hidden", "1024"], check=True, capture_output=True)
    dest, new = tmp_path / "dest", tmp_path / "new"
    for source, folder in (("old.onnx", dest), ("new.onnx", new)):
        folder.mkdir()
        subprocess.run([sys.executable, "-c", CONVERT, str(tmp_path / source),
                        str(folder / "m.onnx"), "0"], check=True)
    return tmp_path / "new.onnx", dest, snapshot(dest), snapshot(new)


def test_a_failed_save_leaves_the_old_model(versions):
    source, dest, old, _ = versions
    r = subprocess.run([sys.executable, "-c", CONVERT, str(source), str(dest / "m.onnx"),
                        str(16 << 20)], capture_output=True)
    assert r.returncode == 1 and b"Error" in r.stderr and b"m.onnx.data" in r.stderr, \
        r.stderr.decode()
    assert snapshot(dest) == old, "the old model changed, or a file was left behind"


@pytest.mark.parametrize("delay", [0, 0.03])
def test_a_killed_save_leaves_the_old_model_or_the_new(versions, delay):
    source, dest, old, new = versions
    # At once (delay 0) the kill must land mid-write; the save may still end first when this
    # process is not scheduled for its whole write, so it gets five tries, each from the old
    # version.
    for _ in range(5):
        killed = kill_mid_write([sys.executable, "-c", CONVERT, source, dest / "m.onnx", "0"],
                                dest, delay, env=dict(os.environ))
        assert_old_new_or_none(snapshot(dest), "m.onnx", old, new)
        if killed or delay > 0:
            break
        restore(dest, old)
    assert killed or delay > 0, "the save ended five times before it could be killed mid-write"


def test_a_model_replaced_by_rename_keeps_its_version(versions, tmp_path):
    """Saved over while open (the data file replaced too): the open model reads the version it
    opened and says which files changed; a model opened afterwards reads the new one."""
    import onnxmap
    source, dest, _, _ = versions
    name = "lm_head.weight"  # the last tensor: its pattern differs with the layer count
    with onnxmap.open(dest / "m.onnx") as model:
        before = model[name].numpy().copy()
        assert model.changed_on_disk() == []
        with onnxmap.open(source) as new:
            onnxmap.save(new, dest / "m.onnx", external_data=True)
        assert model.changed_on_disk() == [dest / "m.onnx", dest / "m.onnx.data"]
        assert model[name].numpy().tobytes() == before.tobytes()
    with onnxmap.open(dest / "m.onnx") as model:
        assert model.changed_on_disk() == []
        assert model[name].numpy().tobytes() != before.tobytes(), "the versions must differ"
