"""Weights verified while they load, from Python (issue 67): Model.hash gives what `onnxmap hash`
writes; Model.verify reports each mismatch; Model.load(verify=) in every mode, load_to_torch
(verify=) through the host engine (the device pipeline: pieces hashed as they are read) and
safe_open(verify=) stop at a flipped byte with an onnxmap.Error naming the tensor and both
digests, handing out no tensor as good. On real exporters' files: test_exporters.py."""
import hashlib
import json
import subprocess

import pytest

import onnxmap
from conftest import ONNXMAP_EXE

FLIPPED = "model.layers.1.mlp.gate_proj.weight"


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "m.onnx"
    subprocess.run([ONNXMAP_EXE, "synth", str(path), "--layers", "2", "--hidden", "64",
                    "--external-data"], check=True, capture_output=True)
    return path


def flip(model, manifest, name=FLIPPED):
    """Flips a bit of `name`'s stored bytes; returns (its manifest entry, the new digest)."""
    t = next(t for t in manifest.tensors if t["name"] == name)
    data = model.parent / t["file"]
    raw = bytearray(data.read_bytes())
    raw[t["offset"] + t["length"] // 2] ^= 0x04
    data.write_bytes(raw)
    got = hashlib.sha256(raw[t["offset"]:t["offset"] + t["length"]]).hexdigest()
    return t, got


def says_mismatch(error, t, got):
    assert error.kind == "bad_tensor", error
    assert (f"tensor '{t['name']}' in '{t['file']}': sha256 digest {got}, the manifest's "
            f"{t['digest']}; the load stopped") in str(error)


def test_hash_is_what_the_command_writes(model):
    written = model.parent / "manifest.json"
    subprocess.run([ONNXMAP_EXE, "hash", str(model), "-o", str(written)], check=True)
    with onnxmap.open(model) as m:
        manifest = m.hash()
        assert json.loads(manifest.to_json()) == json.loads(written.read_text())
        assert repr(manifest) == "<onnxmap.Manifest sha256, 2 files, 21 tensors>"
        assert manifest.files[1]["digest"] == hashlib.sha256(
            (model.parent / "m.onnx.data").read_bytes()).hexdigest()
        again = onnxmap.Manifest.read(written)
        assert again.tensors == manifest.tensors and again.files == manifest.files
        assert m.hash("xxh3-128").algorithm == "xxh3-128"
        with pytest.raises(onnxmap.Error, match="algorithm 'md5': expected sha256 or xxh3-128"):
            m.hash("md5")


def test_verify_reports_a_flipped_bit(model):
    with onnxmap.open(model) as m:
        manifest = m.hash()
        assert m.verify(manifest) == {"ok": True, "files": 2, "tensors": 21,
                                      "bytes": m.verify(manifest)["bytes"], "mismatches": []}
    t, got = flip(model, manifest)
    with onnxmap.open(model) as m:
        report = m.verify(manifest)
    assert not report["ok"]
    tensor = next(x for x in report["mismatches"] if x["what"] == "tensor")
    assert (tensor["name"], tensor["file"], tensor["expected"], tensor["actual"]) == \
        (FLIPPED, "m.onnx.data", t["digest"], got)
    assert [x["name"] for x in report["mismatches"] if x["what"] == "file"] == ["m.onnx.data"]


def test_a_manifest_that_is_not_one_is_a_clean_error(model, tmp_path):
    (tmp_path / "bad.json").write_text("[1, 2]")
    with onnxmap.open(model) as m:
        with pytest.raises(onnxmap.Error, match="not a manifest") as caught:
            m.load(lambda n, a: None, verify=tmp_path / "bad.json")
        assert caught.value.kind == "invalid_argument" and "bad.json" in str(caught.value)
        with pytest.raises(FileNotFoundError):
            m.verify(tmp_path / "missing.json")


@pytest.mark.parametrize("mode", ["map", "read", "direct"])
def test_load_verifies_each_tensor_as_it_lands(model, mode):
    with onnxmap.open(model) as m:
        manifest = m.hash()
        stats = m.load(lambda n, a: None, mode=mode, verify=manifest)
        assert (stats["verified"], stats["not_verified"]) == (21, 0)
        shard = m.load(lambda n, a: None, mode=mode, shard=(0, 2), verify=manifest)
        assert shard["verified"] + shard["not_verified"] == 21 and shard["not_verified"] > 0
    t, got = flip(model, manifest)
    handed = []
    with onnxmap.open(model) as m:
        with pytest.raises(onnxmap.Error) as caught:
            m.load(lambda n, a: handed.append(n), mode=mode, verify=manifest)
    says_mismatch(caught.value, t, got)
    assert FLIPPED not in handed


@pytest.mark.parametrize("path", ["registered", "pinned"])
def test_load_to_torch_verifies_pieces_as_they_are_read(model, path):
    pytest.importorskip("torch")
    with onnxmap.open(model) as m:
        manifest = m.hash("xxh3-128")
        stats = {}
        tensors = m.load_to_torch("cpu", path=path, verify=manifest, stats=stats,
                                  max_in_flight_bytes=64 << 10)  # tensors cut into pieces
        assert (stats["verified"], stats["not_verified"]) == (21, 0)
        assert tensors[FLIPPED].numpy().tobytes() == m[FLIPPED].numpy().tobytes()
        sha = m.hash()
    t, got = flip(model, sha)
    with onnxmap.open(model) as m:
        with pytest.raises(onnxmap.Error) as caught:
            m.load_to_torch("cpu", path=path, verify=sha, max_in_flight_bytes=64 << 10)
    says_mismatch(caught.value, t, got)


def test_safe_open_verifies_what_get_tensor_gives(model):
    with onnxmap.open(model) as m:
        manifest = m.hash()
    (model.parent / "manifest.json").write_text(manifest.to_json())
    t, got = flip(model, manifest)
    for framework in ("np", "pt"):
        if framework == "pt":
            pytest.importorskip("torch")
        with onnxmap.safe_open(model, framework=framework,
                               verify=model.parent / "manifest.json") as f:
            assert f.get_tensor("model.layers.0.mlp.gate_proj.weight").shape == (256, 64)
            with pytest.raises(onnxmap.Error) as caught:
                f.get_tensor(FLIPPED)
            says_mismatch(caught.value, t, got)
            # A slice is read without verifying: the manifest holds whole tensors' digests.
            assert f.get_slice(FLIPPED)[0:2].shape == (2, 64)


def test_convert_with_checksum_gives_each_tensor_its_files_sha1(model, tmp_path):
    import onnx
    out = tmp_path / "sums" / "m.onnx"
    out.parent.mkdir()
    onnxmap.convert(model, out, external_data=True, checksum=True)
    digest = hashlib.sha1((out.parent / "m.onnx.data").read_bytes()).hexdigest()
    proto = onnx.load(str(out), load_external_data=False)
    sums = [{e.key: e.value for e in t.external_data}.get("checksum")
            for t in proto.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert sums and set(sums) == {digest}
    assert onnxmap.check(out, read_data=True) == []


def test_a_rank_verifies_its_rows_with_a_manifest_of_ranks(model):
    with onnxmap.open(model) as m:
        manifest = m.hash(ranks=[2, 4])
        entry = next(t for t in manifest.tensors if t["name"] == FLIPPED)
        assert [s["rows"] for s in entry["slices"]] == \
            [(0, 64), (0, 128), (64, 128), (128, 192), (128, 256), (192, 256)]
        for rank in range(4):
            stats = m.load(lambda n, a: None, shard=(rank, 4), verify=manifest)
            assert (stats["verified"], stats["not_verified"]) == (21, 0), rank
        figures = {}
        m.load_to_torch("cpu", rank=1, ranks=2, verify=manifest, stats=figures)
        assert (figures["verified"], figures["not_verified"]) == (21, 0)
        assert onnxmap.Manifest.from_json(manifest.to_json()).tensors == manifest.tensors
