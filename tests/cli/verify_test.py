"""onnxmap hash and onnxmap verify (issue 67): the manifest's file digests are sha256sum's (here
hashlib's) of the files, each tensor's digest is that of its stored bytes at the offset and
length given; verify says ok for the model hashed, and names the tensor or file with both digests
for a flipped bit, a truncated file, a swapped external file and a tensor moved within its
file; a model-signing tool's signed payload (the in-toto statement, bare, in a DSSE envelope or
in a Sigstore bundle) verifies the files it lists; hostile manifests are clean errors."""
import base64
import hashlib
import json

import pytest


def sha256(path, offset=0, length=None):
    with open(path, "rb") as f:
        f.seek(offset)
        return hashlib.sha256(f.read(length) if length is not None else f.read()).hexdigest()


@pytest.fixture
def model(onnxmap, tmp_path):
    done = onnxmap("synth", tmp_path / "m.onnx", "--layers", "2", "--hidden", "64",
                   "--external-data")
    assert done.returncode == 0, done.stderr
    return tmp_path / "m.onnx"


def hashed(onnxmap, model, *args):
    manifest = model.parent / "manifest.json"
    done = onnxmap("hash", model, "-o", manifest, *args, text=True)
    assert done.returncode == 0, done.stderr
    return manifest, json.loads(manifest.read_text())


def verify(onnxmap, model, manifest):
    return onnxmap("verify", model, manifest, text=True)


def test_the_manifest_holds_each_files_and_tensors_digest(onnxmap, model):
    manifest, m = hashed(onnxmap, model)
    assert (m["format"], m["algorithm"]) == ("onnxmap-manifest/1", "sha256")
    assert [(f["file"], f["size"], f["digest"]) for f in m["files"]] == [
        (name, (model.parent / name).stat().st_size, sha256(model.parent / name))
        for name in ("m.onnx", "m.onnx.data")]
    ls = json.loads(onnxmap("ls", model, "--json", text=True).stdout)
    assert [t["name"] for t in m["tensors"]] == [row["name"] for row in ls]
    for t in m["tensors"]:
        assert t["digest"] == sha256(model.parent / t["file"], t["offset"], t["length"]), t
    done = verify(onnxmap, model, manifest)
    assert done.returncode == 0 and done.stdout.startswith(f"{model}: ok (2 files, 21 tensors"), \
        done.stdout + done.stderr
    # To stdout without -o: the same manifest.
    assert onnxmap("hash", model, text=True).stdout == manifest.read_text()


def test_xxh3_manifests_verify_too(onnxmap, model):
    manifest, m = hashed(onnxmap, model, "--algorithm", "xxh3-128")
    assert m["algorithm"] == "xxh3-128" and all(len(f["digest"]) == 32 for f in m["files"])
    assert verify(onnxmap, model, manifest).returncode == 0


def test_a_flipped_bit_names_the_tensor_and_both_digests(onnxmap, model):
    manifest, m = hashed(onnxmap, model)
    t = next(t for t in m["tensors"] if t["name"] == "model.layers.1.mlp.up_proj.weight")
    data = model.parent / "m.onnx.data"
    raw = bytearray(data.read_bytes())
    raw[t["offset"] + 100] ^= 0x01
    data.write_bytes(raw)
    done = verify(onnxmap, model, manifest)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{model}: file 'm.onnx.data': digest ")
    got = sha256(data, t["offset"], t["length"])
    assert lines[1] == (f"{model}: tensor 'model.layers.1.mlp.up_proj.weight' in 'm.onnx.data': "
                        f"digest {got}, the manifest's {t['digest']}")
    assert done.stderr == f"onnxmap: {model}: 2 mismatches\n"
    report = json.loads(onnxmap("verify", model, manifest, "--json", text=True).stdout)
    assert not report["ok"] and report["mismatches"][1]["expected"] == t["digest"]


def test_a_truncated_data_file_is_a_mismatch_not_a_crash(onnxmap, model):
    manifest, _ = hashed(onnxmap, model)
    data = model.parent / "m.onnx.data"
    data.write_bytes(data.read_bytes()[:300000])
    done = verify(onnxmap, model, manifest)
    assert done.returncode == 1, done.stderr
    assert "file 'm.onnx.data': is 300000 bytes, the manifest's" in done.stdout
    assert "the model has no stored tensor at" in done.stdout


def test_a_swapped_external_file_and_a_moved_tensor_are_found(onnxmap, model, tmp_path):
    per_tensor = tmp_path / "pt" / "m.onnx"
    per_tensor.parent.mkdir()
    assert onnxmap("convert", model, per_tensor, "--external-data",
                   "--one-file-per-tensor").returncode == 0
    manifest, _ = hashed(onnxmap, per_tensor)
    a = per_tensor.parent / "model.layers.0.self_attn.q_proj.weight"
    b = per_tensor.parent / "model.layers.0.self_attn.k_proj.weight"
    a_bytes, b_bytes = a.read_bytes(), b.read_bytes()
    a.write_bytes(b_bytes)
    b.write_bytes(a_bytes)
    done = verify(onnxmap, per_tensor, manifest)
    assert done.returncode == 1
    assert "tensor 'model.layers.0.self_attn.q_proj.weight' in " \
           "'model.layers.0.self_attn.q_proj.weight': digest" in done.stdout
    # The same data packed at other offsets: each tensor moved within its file.
    moved = tmp_path / "moved" / "m.onnx"
    moved.parent.mkdir()
    assert onnxmap("convert", model, moved, "--external-data", "m.onnx.data",
                   "--align", "64").returncode == 0
    original, _ = hashed(onnxmap, model)
    done = verify(onnxmap, moved, original)
    assert done.returncode == 1
    assert "tensor 'model.layers.0.self_attn.k_proj.weight' in 'm.onnx.data': lies in " \
           "m.onnx.data at" in done.stdout, done.stdout


def statement(model):
    folder = model.parent
    return {"_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "m", "digest": {"sha256": "0" * 64}}],
            "predicateType": "https://model_signing/signature/v1.0",
            "predicate": {"serialization": {"method": "files", "hash_type": "sha256"},
                          "resources": [{"algorithm": "sha256", "name": name,
                                         "digest": sha256(folder / name)}
                                        for name in ("m.onnx", "m.onnx.data")]}}


def test_a_signing_tools_payload_verifies_its_files(onnxmap, model):
    s = statement(model)
    payload = base64.b64encode(json.dumps(s).encode()).decode()
    forms = {"statement.json": s,
             "envelope.json": {"payloadType": "application/vnd.in-toto+json", "payload": payload,
                               "signatures": []},
             "model.sig": {"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
                           "dsseEnvelope": {"payloadType": "application/vnd.in-toto+json",
                                            "payload": payload, "signatures": []}}}
    for name, form in forms.items():
        (model.parent / name).write_text(json.dumps(form))
        done = verify(onnxmap, model, model.parent / name)
        assert done.returncode == 0 and "ok (2 files, 0 tensors" in done.stdout, (name, done)
    s["predicate"]["resources"][1]["digest"] = "f" * 64
    (model.parent / "bad.json").write_text(json.dumps(s))
    done = verify(onnxmap, model, model.parent / "bad.json")
    assert done.returncode == 1 and f"the manifest's {'f' * 64}" in done.stdout


@pytest.mark.parametrize("text, says", [
    ("[1, 2]", "not a JSON object"),
    ('{"format": "other/1"}', "format is not onnxmap-manifest/1"),
    ('{"format": "onnxmap-manifest/1", "algorithm": "md5", "files": [], "tensors": []}',
     "the algorithm is sha256 or xxh3-128"),
    ('{"format": "onnxmap-manifest/1", "algorithm": "sha256", "files": [{"file": 1}], '
     '"tensors": []}', 'no string "file"'),
    ('{"format": "onnxmap-manifest/1", "algorithm": "sha256", "files": [], "tensors": [{"name": '
     '"w", "path": "p", "file": "f", "offset": 0, "length": 8, "digest": "00", "slices": [{"rows": '
     '[4, 4], "digest": "00"}]}]}', 'a slice whose "rows" are not [BEGIN, END] with BEGIN < END'),
    ('{"payload": "!!!"}', "the envelope's payload is not base64"),
    ('{"predicate": {"resources": [{"algorithm": "sha256-sharded-8", "name": "m.onnx:0:8", '
     '"digest": "00"}]}}', "resource 'm.onnx:0:8' is hashed with sha256-sharded-8"),
])
def test_hostile_manifests_are_clean_errors(onnxmap, model, text, says):
    (model.parent / "bad.json").write_text(text)
    done = verify(onnxmap, model, model.parent / "bad.json")
    assert done.returncode == 1 and "not a manifest: " + says in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize("device", [None, "host"])
@pytest.mark.parametrize("mode", ["read", "map", "direct"])
def test_load_verify_checks_each_tensor_as_it_lands(onnxmap, model, mode, device):
    manifest, m = hashed(onnxmap, model)
    where = ["--device", device] if device else []
    done = onnxmap("load", model, "--verify", manifest, "--mode", mode, "--json", *where, text=True)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["verified"], out["not_verified"]) == (len(m["tensors"]), 0)
    t = next(t for t in m["tensors"] if t["name"] == "model.layers.1.mlp.gate_proj.weight")
    data = model.parent / "m.onnx.data"
    raw = bytearray(data.read_bytes())
    raw[t["offset"] + 7] ^= 0x80
    data.write_bytes(raw)
    done = onnxmap("load", model, "--verify", manifest, "--mode", mode, *where, text=True)
    assert done.returncode == 1 and done.stdout == ""
    got = sha256(data, t["offset"], t["length"])
    assert (f"tensor 'model.layers.1.mlp.gate_proj.weight' in 'm.onnx.data': sha256 digest "
            f"{got}, the manifest's {t['digest']}; the load stopped") in done.stderr


def test_load_verify_of_a_shard_and_of_a_files_only_payload(onnxmap, model):
    manifest, _ = hashed(onnxmap, model)
    out = json.loads(onnxmap("load", model, "--verify", manifest, "--shard", "0/2", "--json",
                             text=True).stdout)
    assert out["verified"] + out["not_verified"] == out["tensors"] and out["not_verified"] > 0
    (model.parent / "statement.json").write_text(json.dumps(statement(model)))
    done = onnxmap("load", model, "--verify", model.parent / "statement.json", text=True)
    assert done.returncode == 1 and "the manifest has no tensor digests" in done.stderr


def test_convert_checksum_writes_each_data_files_sha1(onnxmap, model, tmp_path):
    """convert --checksum: each external tensor's `checksum` entry is the SHA-1 of its whole
    data file (onnx's definition), for every shard; onnx loads the model, check --data verifies
    the checksums and finds a flipped byte."""
    import onnx
    out = tmp_path / "sums" / "m.onnx"
    out.parent.mkdir()
    done = onnxmap("convert", model, out, "--external-data", "--max-file-size", "131072",
                   "--checksum", text=True)
    assert done.returncode == 0, done.stderr
    proto = onnx.load(str(out), load_external_data=False)
    files = set()
    for t in proto.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            e = {x.key: x.value for x in t.external_data}
            data = (out.parent / e["location"]).read_bytes()
            assert e["checksum"] == hashlib.sha1(data).hexdigest(), (t.name, e)
            files.add(e["location"])
    assert len(files) > 1, files
    assert len(onnx.load(str(out)).graph.initializer) == len(proto.graph.initializer)
    assert onnxmap("check", "--data", out).returncode == 0
    first = out.parent / sorted(files)[0]
    raw = bytearray(first.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    first.write_bytes(raw)
    done = onnxmap("check", "--data", "--json", out, text=True)
    assert done.returncode == 1
    kinds = {p["kind"] for p in json.loads(done.stdout)["problems"]}
    assert "checksum" in kinds, kinds


@pytest.mark.parametrize("device", [None, "host"])
def test_a_rank_verifies_the_rows_it_reads(onnxmap, model, device):
    """hash --ranks 2 gives each sliced tensor the digests of both ranks' rows (hashlib's of
    those bytes); a flipped bit in rank 1's rows stops rank 1's load, naming the rows, and rank
    0's load verifies every tensor it reads."""
    manifest, m = hashed(onnxmap, model, "--ranks", "2")
    data = model.parent / "m.onnx.data"
    t = next(t for t in m["tensors"] if t["name"] == "model.layers.0.mlp.down_proj.weight")
    low, high = [s["rows"] for s in t["slices"]]
    row_bytes = t["length"] // high[1]
    for rows in (low, high):
        offset = t["offset"] + rows[0] * row_bytes
        digest = sha256(data, offset, (rows[1] - rows[0]) * row_bytes)
        assert {"rows": rows, "digest": digest} in t["slices"]
    raw = bytearray(data.read_bytes())
    raw[t["offset"] + high[0] * row_bytes + 1] ^= 0x02
    data.write_bytes(raw)
    where = ["--device", device] if device else []
    out = json.loads(onnxmap("load", model, "--verify", manifest, "--shard", "0/2", "--json",
                             *where, text=True).stdout)
    assert (out["verified"], out["not_verified"]) == (out["tensors"], 0)
    done = onnxmap("load", model, "--verify", manifest, "--shard", "1/2", *where, text=True)
    assert done.returncode == 1 and (
        f"tensor 'model.layers.0.mlp.down_proj.weight' rows {high[0]}..{high[1]} in "
        f"'m.onnx.data': sha256 digest ") in done.stderr, done.stderr
