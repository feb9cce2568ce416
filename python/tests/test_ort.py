"""onnxmap.ort's sessions judged by ONNX Runtime's own: on synth's models (float32 and float16,
inline and external, pre-packing on and off), on a model with subgraph initializers (one name in
two graphs), on the backend corpus, the exporters' corpus and the pinned npm corpus, the outputs
are those of onnxruntime.InferenceSession(path) with the same options, bit for bit. The weights
are handed over, not copied: a session over 192 MB of inline weights adds a few MB of anonymous
memory where ORT's own adds the weights. A 3.9 GB single-file model, which ORT refuses, runs and
gives what ORT gives on its external-data conversion. By http://, s3:// and hf:// (range_server.py
on loopback) the same outputs as from disk. Bad input: ORT's refusal with the model's
path, a SessionOptions given a second model, a release of onnxruntime too old.

Runs where onnxruntime is installed: the PyPI run (tools/venvs/pypi.txt pins it); Debian has no
package of it, so the Debian run skips this module, saying so."""
import gc
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxmap
from conftest import CORPUS, ONNXMAP_EXE, corpus_models, once
from test_remote import RangeServer, serve_clouds

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is PyPI's (the PyPI run has it)")
import onnxmap.ort  # noqa: E402  (imports onnxruntime)
from test_exporters import BIG, corpus, npm_models  # noqa: E402,F401  (fixtures)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "exporters"))
from corpus_names import NAMES, OPTIMUM  # noqa: E402
from ort_inputs import fixed_input  # noqa: E402

CPU = ["CPUExecutionProvider"]


def options(prepacking=True):
    """One thread, so that two sessions of one graph agree bit for bit."""
    o = ort.SessionOptions()
    o.intra_op_num_threads = o.inter_op_num_threads = 1
    o.log_severity_level = 3  # errors only: the corpus's old opsets make ORT warn at length
    if not prepacking:
        o.add_session_config_entry("session.disable_prepacking", "1")
    return o


def assert_same_outputs(path, feeds=None, prepacking=True, inputs=fixed_input):
    """onnxmap.ort's session and ORT's own give the same outputs (or the same refusal)."""
    def run(make):
        session = make()
        rng = np.random.default_rng(0)
        given = feeds or {i.name: inputs(i, rng) for i in session.get_inputs()}
        return session.run(None, given)

    try:
        expected = run(lambda: ort.InferenceSession(str(path), options(prepacking), CPU))
    except Exception as error:  # ORT refuses the model or the input: so must the other
        with pytest.raises(type(error)) as got:
            run(lambda: onnxmap.ort.InferenceSession(path, options(prepacking), CPU))
        assert str(error).split(":")[-1] in str(got.value)
        return None
    session = onnxmap.ort.InferenceSession(path, options(prepacking), CPU)
    rng = np.random.default_rng(0)
    got = session.run(None, feeds or {i.name: inputs(i, rng) for i in session.get_inputs()})
    assert len(got) == len(expected)
    for a, b in zip(expected, got):
        assert isinstance(b, np.ndarray) == isinstance(a, np.ndarray)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape
            if a.dtype == object:  # strings
                assert a.tolist() == b.tolist(), path
            else:
                assert a.tobytes() == b.tobytes(), path
        else:
            assert a == b
    return session


def synth(path, *args):
    subprocess.run([ONNXMAP_EXE, "synth", str(path), *map(str, args)], check=True,
                   capture_output=True)
    return path


@pytest.mark.parametrize("prepacking", [True, False], ids=["prepacking", "no-prepacking"])
@pytest.mark.parametrize("external", [False, True], ids=["inline", "external"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_synth_models_run_as_ort_runs_them(tmp_path, dtype, external, prepacking):
    path = synth(tmp_path / "m.onnx", "--layers", 2, "--hidden", 128, "--dtype", dtype,
                 "--finite", *(["--external-data"] if external else []))
    ids = {"input_ids": np.array([3, 1, 4, 1, 5], np.int64)}
    session = assert_same_outputs(path, ids, prepacking)
    stats = session.onnxmap_stats
    # Every tensor of 1 KiB or more is handed over; the norms' 256 bytes inline stay in the graph.
    small = 0 if external else 5
    assert stats["shared"] == 21 - small and stats["left_to_ort"] == small, stats
    with onnxmap.open(path) as model:
        assert stats["shared_bytes"] + stats["left_to_ort_bytes"] == \
            sum(model[n].nbytes for n in model)
        unaligned = [n for n in model if model[n].file_offset % np.dtype(dtype).itemsize]
    if not external:  # ORT's CPU kernels read them in place all the same
        assert unaligned


def test_the_session_is_onnxruntimes_and_keeps_the_mapping(tmp_path):
    path = synth(tmp_path / "m.onnx", "--layers", 1, "--hidden", 64, "--dtype", "float32",
                 "--finite")
    model = onnxmap.open(path)
    session = model.ort_session(options(), CPU)
    assert isinstance(session, ort.InferenceSession) and session.onnxmap_model is model
    expected = ort.InferenceSession(str(path), options(), CPU).run(
        None, {"input_ids": np.array([7])})[0]
    del model
    gc.collect()
    assert not session.onnxmap_model.closed
    got = session.run(None, {"input_ids": np.array([7])})[0]
    assert got.tobytes() == expected.tobytes()
    session.onnxmap_model.close()  # the arrays ORT reads keep the file mapped
    gc.collect()
    assert session.run(None, {"input_ids": np.array([7])})[0].tobytes() == expected.tobytes()


def test_a_model_read_into_memory_serves_a_session(tmp_path):
    """mode="read" (docs/ort.md: the file held in memory, safe from a cut)."""
    path = synth(tmp_path / "m.onnx", "--layers", 1, "--hidden", 64, "--dtype", "float32",
                 "--finite")
    ids = {"input_ids": np.array([2, 7])}
    expected = ort.InferenceSession(str(path), options(), CPU).run(None, ids)[0]
    with onnxmap.open(path, mode="read") as model:
        session = model.ort_session(options(), CPU)
        stats = session.onnxmap_stats
        assert (stats["shared"], stats["left_to_ort"]) == (9, 3)  # the norms' 256 B stay inline
        assert session.run(None, ids)[0].tobytes() == expected.tobytes()


MEASURE = """
import json, sys, numpy as np, onnxruntime as ort
def anon():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("RssAnon"))
def o():
    made = ort.SessionOptions()
    made.add_session_config_entry("session.disable_prepacking", "1")
    return made
if sys.argv[2] == "onnxmap":
    import onnxmap.ort
    make = lambda: onnxmap.ort.InferenceSession(sys.argv[1], o(), ["CPUExecutionProvider"])
else:
    make = lambda: ort.InferenceSession(sys.argv[1], o(), ["CPUExecutionProvider"])
before = anon()
sessions = [make() for _ in range(int(sys.argv[3]))]
for session in sessions:
    session.run(None, {"input_ids": np.array([1, 2])})
print(json.dumps({"added_kib": anon() - before}))
"""


def test_weights_are_handed_over_not_copied(tmp_path):
    """Anonymous memory after a run, pre-packing off: ORT's own session on the inline file holds
    its copy of the 192 MB of weights; onnxmap's holds a few MB (the weights stay file pages),
    and so do two processes of ten sessions each."""
    path = synth(tmp_path / "m.onnx", "--layers", 3, "--hidden", 1024, "--ffn", 2816,
                 "--dtype", "float32", "--finite")
    weights = path.stat().st_size

    def added(how, sessions=1, processes=1):
        running = [subprocess.Popen([sys.executable, "-c", MEASURE, str(path), how,
                                     str(sessions)], stdout=subprocess.PIPE, text=True)
                   for _ in range(processes)]
        outs = [p.communicate()[0] for p in running]
        assert all(p.returncode == 0 for p in running)
        return [json.loads(out)["added_kib"] * 1024 for out in outs]

    assert added("ort")[0] > 0.9 * weights
    assert added("onnxmap")[0] < 32 * 2 ** 20
    # Two processes of ten sessions each: the weights once, in the page cache they share.
    assert max(added("onnxmap", sessions=10, processes=2)) < 32 * 2 ** 20


def subgraph_model(path):
    """An If whose branches hold initializers: `w` in the main graph and in the else branch (one
    name, two tensors: ORT reads those itself), `w_then` only in the then branch."""
    def weights(seed):
        return np.random.default_rng(seed).standard_normal((16, 16)).astype(np.float32)

    def branch(name, init):
        return helper.make_graph(
            [helper.make_node("MatMul", ["x", init.name], [name + "_y"])], name, [],
            [helper.make_tensor_value_info(name + "_y", TensorProto.FLOAT, [1, 16])], [init])

    then = branch("then", numpy_helper.from_array(weights(1), "w_then"))
    other = branch("else", numpy_helper.from_array(weights(2), "w"))
    graph = helper.make_graph(
        [helper.make_node("If", ["cond"], ["branch_y"], then_branch=then, else_branch=other),
         helper.make_node("MatMul", ["branch_y", "w"], ["y"])], "main",
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
        [numpy_helper.from_array(weights(3), "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


@pytest.mark.parametrize("cond", [True, False])
def test_subgraph_initializers(tmp_path, cond):
    path = subgraph_model(tmp_path / "if.onnx")
    feeds = {"cond": np.array(cond), "x": np.ones((1, 16), np.float32)}
    session = assert_same_outputs(path, feeds)
    assert session.onnxmap_stats["shared"] == 1  # w_then; both w are left to ORT
    assert session.onnxmap_stats["left_to_ort"] == 2


def test_a_model_ort_refuses_gives_its_message_with_the_path(tmp_path):
    graph = helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(graph), str(path))
    with pytest.raises(Exception) as own:
        ort.InferenceSession(str(path), providers=CPU)
    with pytest.raises(type(own.value)) as got:
        onnxmap.ort.InferenceSession(path, providers=CPU)
    assert str(got.value).startswith(f"{path}: ") and "NoSuchOp" in str(got.value)


def test_session_options_serve_the_same_model_again(tmp_path):
    path = synth(tmp_path / "m.onnx", "--layers", 1, "--hidden", 64, "--dtype", "float32")
    other = synth(tmp_path / "other.onnx", "--layers", 1, "--hidden", 128, "--dtype", "float32")
    shared = options()
    sessions = [onnxmap.ort.InferenceSession(path, shared, CPU) for _ in range(3)]
    del sessions
    gc.collect()  # the options keep what ORT reads
    ids = {"input_ids": np.array([5])}
    expected = ort.InferenceSession(str(path), options(), CPU).run(None, ids)[0]
    got = onnxmap.ort.InferenceSession(path, shared, CPU).run(None, ids)[0]
    assert got.tobytes() == expected.tobytes()
    with pytest.raises(onnxmap.Error, match=r"already gives ONNX Runtime a tensor named "
                                            r"'model.embed_tokens.weight', from .*m.onnx: give "
                                            r"each model its own SessionOptions"):
        onnxmap.ort.InferenceSession(other, shared, CPU)


def test_an_onnxruntime_too_old_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(ort, "__version__", "1.20.1")
    with pytest.raises(onnxmap.Error, match=r"needs onnxruntime 1\.21 or later .* this is "
                                            r"onnxruntime 1\.20\.1"):
        onnxmap.ort.InferenceSession(tmp_path / "any.onnx")


@pytest.fixture
def served(tmp_path, monkeypatch):
    """synth's model inline and with external data, served by range_server.py (tests/remote/)
    as http://, as s3:// (bucket "ok", its plain mode) and as hf:// (the Hub at its /hub/)."""
    root = tmp_path / "root" / "org" / "repo"
    root.mkdir(parents=True)
    for name, extra in (("inline.onnx", []), ("external.onnx", ["--external-data"])):
        synth(root / name, "--layers", 1, "--hidden", 64, "--dtype", "float32", "--finite",
              *extra)
    server = RangeServer(tmp_path / "root", tmp_path / "log")
    serve_clouds(server, monkeypatch, tmp_path)
    yield root, {"http": lambda name: server.url("org/repo/" + name),
                 "s3": lambda name: f"s3://ok/org/repo/{name}",
                 "hf": lambda name: f"hf://org/repo/{name}@main"}
    server.process.kill()
    server.process.wait()


@pytest.mark.parametrize("name", ["inline.onnx", "external.onnx"])
@pytest.mark.parametrize("scheme", ["http", "s3", "hf"])
def test_a_url_runs_as_the_local_file(served, scheme, name):
    """Fetched once, whole, into a mirror that lives as long as the session."""
    root, url = served
    ids = {"input_ids": np.array([4, 2])}
    expected = ort.InferenceSession(str(root / name), options(), CPU).run(None, ids)[0]
    session = onnxmap.ort.InferenceSession(url[scheme](name), options(), CPU)
    assert session.run(None, ids)[0].tobytes() == expected.tobytes()
    assert session.onnxmap_stats["shared"] == (12 if name == "external.onnx" else 9)
    mirror = pathlib.Path(session._onnxmap_mirror.name)
    assert mirror.is_dir()
    del session
    gc.collect()
    assert not mirror.exists()


def test_a_model_opened_by_url_needs_a_cache(served, tmp_path):
    root, url = served
    with onnxmap.open(url["http"]("inline.onnx")) as model:
        with pytest.raises(onnxmap.Error, match="opened by URL without cache_dir"):
            model.ort_session(options(), CPU)
    with onnxmap.open(url["http"]("external.onnx"), cache_dir=tmp_path / "cache") as model:
        ids = {"input_ids": np.array([9])}
        expected = ort.InferenceSession(str(root / "external.onnx"), options(), CPU).run(
            None, ids)[0]
        assert model.ort_session(options(), CPU).run(None, ids)[0].tobytes() == \
            expected.tobytes()


def backend_inputs(folder):
    data = folder / "test_data_set_0"
    inputs = sorted(data.glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
    return [numpy_helper.to_array(onnx.load_tensor(str(p))) for p in inputs]


def test_backend_corpus(tmp_path):
    """Every backend model with a tensor-only data set: the same outputs or the same refusal."""
    judged, models = 0, corpus_models()
    for path in models:
        try:
            values = backend_inputs(path.parent)
        except Exception:  # sequences, maps, optionals: not plain tensors
            continue
        names = [i.name for i in onnx.load(str(path), load_external_data=False).graph.input]
        assert_same_outputs(path, dict(zip(names, values)) if values else None)
        judged += 1
    if not models:
        pytest.skip(f"corpus {CORPUS} not found (it lives in ../shared beside the checkout)")
    assert judged > 0.9 * len(models), (judged, len(models))


@pytest.mark.parametrize("name", NAMES)
def test_exporters_corpus(corpus, name):  # noqa: F811  (corpus: a fixture)
    if name in OPTIMUM and not (corpus / name).is_dir():
        pytest.skip(f"{name} is Optimum's, not made here (ONNXMAP_OPTIMUM_VENV unset)")
    models = sorted((corpus / name).glob("*.onnx"))
    assert models
    for path in models:
        assert_same_outputs(path, prepacking=name != BIG)


def generic_input(given, rng):
    """An input for any model: symbolic dimensions 1, small values."""
    shape = [d if isinstance(d, int) and d >= 0 else 1 for d in given.shape]
    kind = given.type[len("tensor("):-1]
    if kind == "string":
        return np.full(shape, "a", dtype=object)
    if kind == "bool":
        return np.zeros(shape, bool)
    dtype = np.dtype({"float": "float32", "double": "float64"}.get(kind, kind))
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(0, 4, shape).astype(dtype)


def test_npm_corpus(npm_models):  # noqa: F811  (a fixture)
    for path in npm_models.values():
        assert_same_outputs(path, inputs=generic_input)


@once
def test_a_single_file_past_2gb_runs(tmp_path):
    """3.9 GB inline (payloads as holes): ORT alone refuses it; onnxmap.ort runs it and gives
    what ORT gives on the same model converted to external data."""
    big = synth(tmp_path / "big.onnx", "--layers", 4, "--hidden", 4096, "--dtype", "float32",
                "--sparse")
    assert big.stat().st_size > 3.5 * 2 ** 30
    with pytest.raises(Exception):
        ort.InferenceSession(str(big), options(False), CPU)
    external = tmp_path / "external.onnx"
    subprocess.run([ONNXMAP_EXE, "convert", str(big), str(external), "--external-data"],
                   check=True, capture_output=True)
    ids = {"input_ids": np.array([1, 2], np.int64)}
    expected = ort.InferenceSession(str(external), options(False), CPU).run(None, ids)[0]
    got = onnxmap.ort.InferenceSession(big, options(False), CPU).run(None, ids)[0]
    assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()
