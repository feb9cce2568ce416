"""ONNX to safetensors (issue 66, item 1): `convert --data-format safetensors` and a
".safetensors" destination, judged by the safetensors library (safe_open on every file written:
the same bytes as onnxmap's tensors of the source), by onnx (its checker says of the copy what it
says of the source; numpy_helper reads the same arrays through the external data) and by ONNX
Runtime (the copy's outputs are the source's, bit for bit), on synth's models, the backend
corpus, the exporters' corpus and the pinned npm corpus. The layout: each payload at a multiple of
its element size, the data after a header padded to 4096, the Hub's shard names and index.

Runs where safetensors is installed: the PyPI run (tools/venvs/pypi.txt pins it); Debian has no
package of it, so the Debian run skips this module, saying so."""
import json
import struct
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxmap
from conftest import ONNXMAP_EXE, corpus_models

safetensors = pytest.importorskip("safetensors", reason="safetensors is PyPI's (the PyPI run "
                                  "has it)")
from safetensors import safe_open  # noqa: E402
from test_exporters import corpus, npm_models  # noqa: E402,F401  (fixtures)

ELEMENT_BYTES = {"F64": 8, "I64": 8, "U64": 8, "C64": 8, "F32": 4, "I32": 4, "U32": 4,
                 "F16": 2, "BF16": 2, "I16": 2, "U16": 2}


def convert(src, dst, *args):
    done = subprocess.run([ONNXMAP_EXE, "convert", str(src), str(dst), *map(str, args)],
                          capture_output=True, text=True)
    return done


def header_of(path):
    with open(path, "rb") as f:
        length = struct.unpack("<Q", f.read(8))[0]
        return 8 + length, json.loads(f.read(length))


def assert_same_tensors(source, written):
    """Every safetensors file beside `written` holds, by its external data, onnxmap's bytes of
    the source's tensor; each payload is aligned to its element size."""
    with onnxmap.open(source) as src, onnxmap.open(written) as out:
        for i in range(out.tensor_count()):
            t = out.tensor_at(i)
            if t.storage != "external":
                continue
            assert t.data_file.endswith(".safetensors")
            data_start, header = header_of(t.file_path)
            key = next(k for k, v in header.items() if k != "__metadata__"
                       and data_start + v["data_offsets"][0] == t.file_offset)
            entry = header[key]
            assert entry["shape"] == list(t.shape)
            assert (t.file_offset - data_start) % ELEMENT_BYTES.get(entry["dtype"], 1) == 0
            assert data_start % 4096 == 0
            with safe_open(t.file_path, "np") as f:
                assert f.get_slice(key).get_shape() == list(t.shape)
            original = src.tensor_at_path(t.path)
            with open(t.file_path, "rb") as f:
                f.seek(t.file_offset)
                stored = f.read(t.nbytes)
            assert stored == original.numpy().tobytes() or t.data_type in ("BOOL",), t.name


def outputs(path):
    import onnxruntime as ort
    from ort_inputs import fixed_input
    o = ort.SessionOptions()
    o.intra_op_num_threads = o.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), o, ["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    return session.run(None, {i.name: fixed_input(i, rng) for i in session.get_inputs()})


def synth(path, *args):
    subprocess.run([ONNXMAP_EXE, "synth", str(path), *map(str, args)], check=True,
                   capture_output=True)
    return path


@pytest.mark.parametrize("shards", [None, "64K"])
def test_synth_model_to_safetensors(tmp_path, shards):
    source = synth(tmp_path / "m.onnx", "--layers", 2, "--hidden", 64, "--dtype", "float32",
                   "--finite")
    out = tmp_path / "out" / "m.onnx"
    out.parent.mkdir()
    done = convert(source, out, "--data-format", "safetensors",
                   *(["--shard-size", shards] if shards else []))
    assert done.returncode == 0, done.stderr
    assert_same_tensors(source, out)
    names = sorted(p.name for p in out.parent.iterdir())
    if shards:
        shard_files = [n for n in names if n.startswith("model-")]
        assert len(shard_files) > 1
        count = len(shard_files)
        assert shard_files == [f"model-{i:05d}-of-{count:05d}.safetensors"
                               for i in range(1, count + 1)]
        index = json.loads((out.parent / "model.safetensors.index.json").read_text())
        assert sorted(set(index["weight_map"].values())) == shard_files
        assert index["metadata"]["total_size"] == sum(
            v["data_offsets"][1] - v["data_offsets"][0] for f in shard_files
            for k, v in header_of(out.parent / f)[1].items() if k != "__metadata__")
    else:
        assert names == ["m.onnx", "model.safetensors"]
        with safe_open(out.parent / "model.safetensors", "np") as f:
            assert f.metadata() == {"source": "m.onnx",
                                    "producer": f"onnxmap {onnxmap.__version__}"}
    onnx.checker.check_model(str(out), full_check=True)
    ids = {"input_ids": np.array([1, 2, 3])}
    import onnxruntime as ort
    a = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"]).run(None, ids)
    b = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, ids)
    assert a[0].tobytes() == b[0].tobytes()


def test_weights_alone(tmp_path):
    source = synth(tmp_path / "m.onnx", "--layers", 1, "--hidden", 64, "--dtype", "float16")
    done = convert(source, tmp_path / "weights.safetensors")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{tmp_path / 'weights.safetensors'}: 12 tensors in 1 file")
    with onnxmap.open(source) as model, safe_open(tmp_path / "weights.safetensors", "np") as f:
        assert sorted(f.keys()) == sorted(model.keys())  # the 128-byte norms too
        for name in model.keys():
            got = f.get_tensor(name)
            assert got.tobytes() == model[name].numpy().tobytes(), name
    result = onnxmap.convert(source, tmp_path / "python.safetensors", max_external_file_size=8192)
    assert result["model_bytes"] == 0 and result["data_files"][-1] == \
        "python.safetensors.index.json"


def test_types_safetensors_cannot_hold_are_refused(tmp_path):
    graph = helper.make_graph([], "g", [], [], initializer=[
        helper.make_tensor("words", TensorProto.STRING, [2], [b"a", b"b"]),
        numpy_helper.from_array(np.zeros(4096, np.float32), "zeros")])
    path = tmp_path / "strings.onnx"
    onnx.save(helper.make_model(graph), str(path))
    done = convert(path, tmp_path / "w.safetensors")
    assert done.returncode == 1
    assert "tensor 'words' is STRING, which safetensors cannot hold" in done.stderr
    assert not (tmp_path / "w.safetensors").exists()
    # In a model, a STRING tensor stays inline (it never goes external); the rest is converted.
    assert convert(path, tmp_path / "m.onnx", "--data-format", "safetensors").returncode == 0
    c128 = helper.make_graph([], "g", [], [], initializer=[numpy_helper.from_array(
        np.zeros(512, np.complex128), "c")])
    onnx.save(helper.make_model(c128), str(tmp_path / "c.onnx"))
    done = convert(tmp_path / "c.onnx", tmp_path / "c2.onnx", "--data-format", "safetensors")
    assert done.returncode == 1 and "tensor 'c' is COMPLEX128" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.onnx", "m.onnx", "model.safetensors",
                                                          "strings.onnx"]


def test_backend_corpus(tmp_path):
    judged = 0
    for source in corpus_models():
        out = tmp_path / f"{judged}" / "model.onnx"
        out.parent.mkdir()
        done = convert(source, out, "--data-format", "safetensors")
        if done.returncode != 0:
            assert "safetensors cannot hold" in done.stderr, (source, done.stderr)
            continue
        assert_same_tensors(source, out)
        judged += 1
    assert judged > 0.8 * len(corpus_models())


def checker_verdict(path):
    try:
        onnx.checker.check_model(str(path), full_check=False)
        return "ok"
    except onnx.checker.ValidationError as e:
        return type(e).__name__


def test_exporters_corpus(corpus, tmp_path):  # noqa: F811  (a fixture)
    import sys
    sys.path.insert(0, str(pathlib_root() / "tests" / "exporters"))
    for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
        for source in sorted(folder.glob("*.onnx")):
            if source.stat().st_size + sum(p.stat().st_size for p in folder.iterdir()) > 2 ** 30:
                continue  # the model past 2 GB: converted by the bench, not here
            out = tmp_path / folder.name / source.name
            out.parent.mkdir(exist_ok=True)
            done = convert(source, out, "--data-format", "safetensors", "--external-data",
                           source.stem + ".safetensors", "--shard-size", "256K")
            assert done.returncode == 0, (source, done.stderr)
            assert_same_tensors(source, out)
            assert checker_verdict(out) == checker_verdict(source)
            for a, b in zip(outputs(source), outputs(out)):
                assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), source


def pathlib_root():
    from conftest import SOURCE_ROOT
    return SOURCE_ROOT


def test_npm_corpus(npm_models, tmp_path):  # noqa: F811  (a fixture)
    for key, source in npm_models.items():
        out = tmp_path / key / "model.onnx"
        out.parent.mkdir(parents=True)
        done = convert(source, out, "--data-format", "safetensors")
        assert done.returncode == 0 or "safetensors cannot hold" in done.stderr, (key, done.stderr)
        if done.returncode == 0:
            assert_same_tensors(source, out)


def test_check_compares_each_tensor_with_the_header(tmp_path):
    """check reads each safetensors header: a dtype that disagrees with the ONNX side, and a
    header length past the file, are problems naming the tensor or the file."""
    source = synth(tmp_path / "m.onnx", "--layers", 1, "--hidden", 64, "--dtype", "float32")
    out = tmp_path / "st.onnx"
    assert convert(source, out, "--data-format", "safetensors").returncode == 0
    assert subprocess.run([ONNXMAP_EXE, "check", str(out)], capture_output=True).returncode == 0
    data = tmp_path / "model.safetensors"
    start, header = header_of(data)
    header["lm_head.weight"]["dtype"] = "I32"
    text = json.dumps(header).encode()
    with open(data, "r+b") as f:
        f.seek(8)
        f.write(text + b" " * (start - 8 - len(text)))
    done = subprocess.run([ONNXMAP_EXE, "check", str(out)], capture_output=True, text=True)
    assert done.returncode == 1
    assert "tensor 'lm_head.weight' in 'model.safetensors' at byte" in done.stdout
    assert "is FLOAT, the header's 'lm_head.weight' I32" in done.stdout
    with open(data, "r+b") as f:
        f.write(struct.pack("<Q", 1 << 40))
    done = subprocess.run([ONNXMAP_EXE, "check", str(out)], capture_output=True, text=True)
    assert done.returncode == 1
    assert "model.safetensors: safetensors header: a header of 1099511627776 bytes passes" in \
        done.stdout
