"""The viewer's safetensors data files (tools/onnxmap/viewer/api.md: /api/summary's data_files,
/api/safetensors): on a model whose weights are the Hub's shards, each file's size, format and
tensors are those on disk and of `ls --json`; each header's entries are the header's own (parsed
here from the file, as the format defines it), each beside the model's tensor that points at it;
the same by URL; a broken header is the file's error, not a failed page; bad requests are clean
4xx answers."""
import json
import struct
import subprocess

import pytest

from view_api_test import serving
from viewer import HttpError, Viewer


def header_of(path):
    with open(path, "rb") as f:
        length = struct.unpack("<Q", f.read(8))[0]
        return 8 + length, json.loads(f.read(length))


@pytest.fixture(scope="module")
def shards(onnxmap, tmp_path_factory):
    folder = tmp_path_factory.mktemp("shards")
    subprocess.run([onnxmap.path, "synth", folder / "source.onnx", "--layers", "2", "--hidden",
                    "64"], check=True, capture_output=True)
    # Named ext.onnx: the range server's fixture serves that name.
    subprocess.run([onnxmap.path, "convert", folder / "source.onnx", folder / "ext.onnx",
                    "--data-format", "safetensors", "--shard-size", "256K"], check=True,
                   capture_output=True)
    return folder


def expected_files(onnxmap, folder):
    rows = json.loads(onnxmap("ls", folder / "ext.onnx", "--json", text=True).stdout)
    files = {}
    for row in rows:
        if row["storage"] == "external":
            entry = files.setdefault(row["file"], {"tensors": 0, "bytes": 0})
            entry["tensors"] += 1
            entry["bytes"] += row["bytes"]
    return files


def check_data_files(onnxmap, v, folder):
    data_files = v.get("/api/summary")["data_files"]
    expected = expected_files(onnxmap, folder)
    assert [f["location"] for f in data_files] == sorted(expected)
    for f in data_files:
        start, header = header_of(folder / f["location"])
        assert (f["format"], f["size"], f["header_bytes"]) == \
            ("safetensors", (folder / f["location"]).stat().st_size, start)
        assert (f["tensors"], f["bytes"]) == (expected[f["location"]]["tensors"],
                                              expected[f["location"]]["bytes"])
        assert f["metadata"] == header["__metadata__"]
        entries = {k: v for k, v in header.items() if k != "__metadata__"}
        assert (f["entries"], f["entries_unused"]) == (len(entries), 0)
        shown = v.get("/api/safetensors", file=f["location"], limit=1000)
        assert shown["total"] == len(entries)
        by_offset = sorted(entries.items(), key=lambda kv: kv[1]["data_offsets"])
        assert [(e["name"], e["dtype"], e["shape"], e["data_offsets"]) for e in shown["entries"]] \
            == [(k, e["dtype"], e["shape"], e["data_offsets"]) for k, e in by_offset]
        # onnxmap's safetensors writer names each entry after its tensor.
        assert all(e["tensor"]["name"] == e["name"] for e in shown["entries"])
        page = v.get("/api/safetensors", file=f["location"], offset=1, limit=1)
        assert page["entries"] == shown["entries"][1:2]


def test_shards_as_their_headers_say(onnxmap, shards):
    with Viewer(onnxmap.path, shards / "ext.onnx") as v:
        check_data_files(onnxmap, v, shards)
        for query, status in (({"file": "nope.safetensors"}, 404),
                              ({"file": "model-00001-of-00002.safetensors", "limit": 5000}, 400)):
            with pytest.raises(HttpError) as e:
                v.get("/api/safetensors", **query)
            assert e.value.status == status


def test_by_url_as_local(onnxmap, shards, tmp_path):
    with serving(shards, tmp_path / "log") as (url, _), Viewer(onnxmap.path, url) as v:
        check_data_files(onnxmap, v, shards)


def test_a_broken_header_is_the_files_error(onnxmap, shards, tmp_path):
    folder = tmp_path / "broken"
    subprocess.run(["cp", "-r", str(shards), str(folder)], check=True)
    with open(folder / "model-00002-of-00002.safetensors", "r+b") as f:
        f.write(struct.pack("<Q", 1 << 40))
    with Viewer(onnxmap.path, folder / "ext.onnx") as v:
        files = {f["location"]: f for f in v.get("/api/summary")["data_files"]}
        assert "passes safetensors' limit" in files["model-00002-of-00002.safetensors"]["error"]
        assert "entries" not in files["model-00002-of-00002.safetensors"]
        with pytest.raises(HttpError) as e:
            v.get("/api/safetensors", file="model-00002-of-00002.safetensors")
        assert e.value.status == 500
