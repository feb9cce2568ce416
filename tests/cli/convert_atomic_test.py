"""`onnxmap convert` over an existing destination is all-or-nothing: a write that fails (a file
size limit, as a full disk fails it) or a convert killed with SIGKILL mid-write leaves the old
model and its data files byte for byte, or (killed while the files are put in place) the new
version whole, or no model; never a half-written file under a final name, never a temporary file
behind (write_faults.py)."""
import resource
import subprocess

import pytest

from write_faults import assert_old_new_or_none, kill_mid_write, restore, snapshot


def run(*args, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True, **kwargs)


@pytest.fixture(scope="module")
def sources(onnxmap, tmp_path_factory):
    """Two versions of a model: an old one of 1 layer and a new one of 4 (about 115 MB)."""
    folder = tmp_path_factory.mktemp("sources")
    for name, layers in (("old.onnx", 1), ("new.onnx", 4)):
        r = run(onnxmap, "synth", folder / name, "--layers", layers, "--hidden", "1024")
        assert r.returncode == 0, r.stderr.decode()
    return folder


# Destinations: one data file (replaced by the new one), split data files (some replaced, some
# new), and inline (no data file).
LAYOUTS = {
    "one data file": ["--external-data"],
    "split data": ["--external-data", "--max-file-size", "32M"],
    "inline": ["--inline"],
}


def versions(onnxmap, sources, tmp_path, layout):
    """The destination folder holding the old version converted with `layout`, and snapshots of
    the old version and of the new one (converted the same way into another folder)."""
    dest, new = tmp_path / "dest", tmp_path / "new"
    dest.mkdir()
    new.mkdir()
    for source, folder in (("old.onnx", dest), ("new.onnx", new)):
        r = run(onnxmap, "convert", sources / source, folder / "m.onnx", *LAYOUTS[layout])
        assert r.returncode == 0, r.stderr.decode()
    return dest, snapshot(dest), snapshot(new)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_failed_convert_leaves_the_old_destination(onnxmap, sources, tmp_path, layout):
    dest, old, _ = versions(onnxmap, sources, tmp_path, layout)

    def limit():  # 16 MiB: the new version's first large file fails midway
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 20, resource.RLIM_INFINITY))
    r = run(onnxmap, "convert", sources / "new.onnx", dest / "m.onnx", *LAYOUTS[layout],
            preexec_fn=limit)
    assert r.returncode == 1 and "m.onnx" in r.stderr.decode(), r.stderr.decode()
    assert snapshot(dest) == old, "the old destination changed, or a file was left behind"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_killed_convert_leaves_the_old_destination_or_the_new(onnxmap, sources, tmp_path,
                                                                 layout):
    dest, old, new = versions(onnxmap, sources, tmp_path, layout)
    killed = 0
    # Killed at once when it starts writing, and later, when it may be putting files in place;
    # each run starts from the old version.
    for delay in (0, 0.02, 0.05):
        if kill_mid_write([onnxmap, "convert", sources / "new.onnx", dest / "m.onnx",
                           *LAYOUTS[layout]], dest, delay):
            killed += 1
        assert_old_new_or_none(snapshot(dest), "m.onnx", old, new)
        restore(dest, old)
    assert killed > 0, "convert ended every time before it could be killed mid-write"
