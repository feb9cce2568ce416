"""The viewer's JSON API (tools/onnxmap/viewer/api.md) against `onnxmap info --stats --json`,
`ls --json`, `check --json`, python3-onnx and numpy, on synthetic models (inline and external
data, every numeric dtype) and every model of the corpus; then a model of 4 GiB of holes
(statistics cancelled, jobs bounded) and a model read over HTTP."""
import contextlib
import json
import pathlib
import subprocess
import sys
import time
import urllib.request

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import golden_model
import graph_judge
import numpy_stats
from viewer import HttpError, Viewer

HERE = pathlib.Path(__file__).resolve().parent


def run_json(onnxmap, *args):
    r = onnxmap(*args, "--json", text=True)
    return json.loads(r.stdout)


def all_rows(v, **query):
    rows = []
    while True:
        page = v.get("/api/tensors", offset=len(rows), limit=1000, **query)
        rows += page["rows"]
        if len(rows) >= page["matched"] or not page["rows"]:
            return rows


def check_summary(onnxmap, v, model):
    info = run_json(onnxmap, "info", model, "--stats")
    s = v.get("/api/summary")
    same = [k for k in info if k != "stats" and s.get(k) != info[k]]
    assert not same, f"summary as info --json: these differ: {same}"
    stats = info["stats"]
    assert (s["tensors"], s["by_dtype"], s["op_types"]) == \
        (stats["tensors"], stats["by_dtype"], stats["nodes_by_op_type"]), "counts as info --stats"
    storage_bytes = sum(e["bytes"] for e in s["by_storage"].values())
    dtype_bytes = sum(e["bytes"] for e in s["by_dtype"].values())
    assert storage_bytes == dtype_bytes == s["tensor_bytes"], \
        f"bytes by storage and by dtype add up: {(storage_bytes, dtype_bytes, s['tensor_bytes'])}"
    problems = run_json(onnxmap, "check", model)["problems"]
    warnings = v.get("/api/warnings")["warnings"]
    assert len(warnings) == len(problems), \
        f"warnings are check's findings: {warnings} against {problems}"


def treemap_leaves(v, prefix):
    """(tensors, bytes) reached by unfolding the treemap from `prefix`; every level's children
    add up to it."""
    m = v.get("/api/treemap", prefix=prefix)
    tensors = 0
    for child in m["children"]:
        if child.get("leaf") or child.get("others") or child.get("terminal"):
            tensors += child["tensors"]
        else:
            tensors += treemap_leaves(v, child["prefix"])[0]
    assert sum(c["bytes"] for c in m["children"]) == m["bytes"], \
        f"treemap {prefix!r}: children add up"
    return tensors, m["bytes"]


def check_tensors(onnxmap, v, model):
    listed = run_json(onnxmap, "ls", model)
    rows = all_rows(v)
    plain = [{k: x for k, x in r.items() if k not in ("index", "elements")} for r in rows]
    assert plain == listed, f"tensor rows are ls --json's: {plain[:2]} against {listed[:2]}"
    assert all(r["elements"] == int(np.prod(r["dims"], dtype=np.int64)) for r in rows), \
        "elements are the product of dims"
    for sort, ls_sort in (("name", "name"), ("offset", "offset")):
        got = [r["path"] for r in all_rows(v, sort=sort)]
        want = [r["path"] for r in run_json(onnxmap, "ls", model, "--sort", ls_sort)]
        assert got == want, f"sort={sort} as ls --sort {ls_sort}"
    by_bytes = [r["bytes"] for r in all_rows(v, sort="bytes", order="desc")]
    assert by_bytes == sorted((r["bytes"] for r in listed), reverse=True), "sort=bytes desc"
    for glob in ("*.weight", "*a*", "[a-m]*"):
        got = [r["path"] for r in all_rows(v, filter=glob)]
        want = [r["path"] for r in run_json(onnxmap, "ls", model, "--filter", glob)]
        assert got == want, f"filter {glob} as ls --filter"
    leaves, total = treemap_leaves(v, "")
    assert total == sum(r["bytes"] for r in listed) and leaves == len(listed), \
        f"the treemap holds every tensor's bytes once: {(leaves, total)}"


def graph_node_ids(v, level="g:", depth=0):
    """The node of each node box reached by drawing every level of /api/graph from `level`
    (each block of a repeat as its own level)."""
    ids = []
    for box in v.get("/api/graph", level=level, open="")["boxes"]:
        if box["kind"] == "node":
            ids.append(box["node"])
        elif box["kind"] == "repeat" and depth < 64:
            for shown in range(box["count"]):
                ids += graph_node_ids(v, graph_judge.with_shown(box["id"], shown), depth + 1)
        elif box["kind"] in ("group", "range") and depth < 64:
            ids += graph_node_ids(v, box["id"], depth + 1)
    return ids


def check_graph(v, model_proto):
    nodes = list(model_proto.graph.node)
    rows, offset = [], 0
    while True:
        page = v.get("/api/nodes", offset=offset, limit=1000)
        rows += page["rows"]
        offset += len(page["rows"])
        if offset >= page["matched"] or not page["rows"]:
            break
    want = [(n.name, n.op_type, list(n.input), list(n.output)) for n in nodes]
    got = [(r["name"], r["op_type"].split(".")[-1], r["inputs"], r["outputs"]) for r in rows]
    assert got == want, f"/api/nodes lists the graph's nodes: {got[:2]} against {want[:2]}"
    drawn = graph_judge.GraphJudge(model_proto.graph).drawn
    assert sorted(graph_node_ids(v)) == drawn, \
        "unfolding /api/graph reaches every node once (but Constant/Identity drawn inside another)"
    by_id = {r["id"]: r for r in rows}
    boxes = [b for b in v.get("/api/graph", level="g:", open="")["boxes"] if b["kind"] == "node"]
    assert all((b["name"], b["op"]) == (by_id[b["node"]]["name"], by_id[b["node"]]["op_type"])
               for b in boxes), "node boxes name their nodes as /api/nodes does"
    initializers = {t.name for t in model_proto.graph.initializer}
    for i, n in enumerate(nodes[:40]):
        page = v.get("/api/node", id=i)
        assert [a["name"] for a in page["node"]["attributes"]] == [a.name for a in n.attribute], \
            f"node {i} attributes"
        assert page["tensors"] == [x for x in n.input if x in initializers], \
            f"node {i} tensor links"
        by_id = {x["id"]: x for x in page["neighbourhood"]["nodes"]}
        bad = [e for e in page["neighbourhood"]["edges"]
               if e["tensor"] not in nodes[e["to"]].input
               or e["tensor"] not in nodes[e["from"]].output]
        assert not bad and by_id[i]["distance"] == 0, f"node {i} neighbourhood edges: {bad}"


def expected_number(x):
    if np.isnan(x):
        return "nan"
    return ("inf" if x > 0 else "-inf") if np.isinf(x) else float(x)


def expected_values(array, count=64):
    flat = array.reshape(-1)[:count]
    if flat.dtype.kind in "SUO":
        return [x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in flat]
    if flat.dtype.kind == "c":
        return [[expected_number(x.real), expected_number(x.imag)] for x in flat]
    return [expected_number(x) for x in flat.astype(np.float64)]


def check_values(v, model_proto):
    names = [t.name for t in model_proto.graph.initializer]
    for t in model_proto.graph.initializer:
        if names.count(t.name) != 1 or t.data_location == onnx.TensorProto.EXTERNAL:
            continue
        try:
            array = numpy_helper.to_array(t)
        except Exception:  # a dtype python3-onnx 1.12 cannot decode
            continue
        got = v.get("/api/values", name=t.name, count=64)["values"]
        want = expected_values(array)
        same = len(got) == len(want) and all(
            g == w or (isinstance(g, float) and isinstance(w, float) and numpy_stats.close(g, w))
            for g, w in zip(got, want))
        assert same, f"first values of {t.name}: {got[:4]} against {want[:4]}"


def check_model(onnxmap, path):
    """Every page of the API on one model against the command and python3-onnx; then the
    viewer stops on Ctrl-C with status 0."""
    model_proto = onnx.load(str(path), load_external_data=False)
    with Viewer(onnxmap.path, path) as v:
        check_summary(onnxmap, v, path)
        check_tensors(onnxmap, v, path)
        check_graph(v, model_proto)
        check_values(v, model_proto)
        code = v.stop()
    assert code == 0, f"the viewer stops on Ctrl-C with status 0: {v.stderr}"


def run_stats(v, name, bins=32):
    job = v.get("/api/stats", "POST", name=name, bins=bins)["job"]
    while True:
        status = v.get("/api/stats", job=job)
        if status["state"] != "running":
            return status
        time.sleep(0.02)


@pytest.fixture(scope="module")
def synth(onnxmap, tmp_path_factory):
    path = tmp_path_factory.mktemp("synth") / "model.onnx"
    subprocess.run([onnxmap.path, "synth", path, "--layers", "3", "--hidden", "64"], check=True,
                   capture_output=True)
    return path


def test_synth_model(onnxmap, synth):
    check_model(onnxmap, synth)


def test_corpus_model(onnxmap, corpus_model):
    check_model(onnxmap, corpus_model)


def onnx_subgraph_nodes(nodes):
    """Nodes of the graphs `nodes` hold in attributes, at any depth (python3-onnx's count)."""
    n = 0
    for node in nodes:
        for a in node.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                n += len(g.node) + onnx_subgraph_nodes(g.node)
    return n


def nested_model(folder):
    """Main graph: an If whose then branch holds another If, and a call of a two-node function."""
    def branch(name, nodes):
        out = helper.make_tensor_value_info(name + "_out", onnx.TensorProto.FLOAT, [2])
        return helper.make_graph(nodes, name, [], [out])

    def const(name):
        return helper.make_node("Constant", [], [name + "_out"],
                                value=numpy_helper.from_array(np.zeros(2, np.float32), ""))

    inner = helper.make_node("If", ["c"], ["then_out"], then_branch=branch("a", [const("a")]),
                             else_branch=branch("b", [const("b")]))
    outer = helper.make_node("If", ["c"], ["y"], then_branch=branch("then", [inner]),
                             else_branch=branch("else", [const("else")]))
    twice = helper.make_function("local", "Twice", ["x"], ["z"], [
        helper.make_node("Add", ["x", "x"], ["t"]), helper.make_node("Identity", ["t"], ["z"])],
        [helper.make_opsetid("", 17)])
    call = helper.make_node("Twice", ["y"], ["z"], domain="local")
    graph = helper.make_graph(
        [outer, call], "nested", [helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, functions=[twice], opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    path = folder / "nested.onnx"
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize("label", ["synth", "golden", "nested"])
def test_summary_counts_main_graph_subgraph_and_function_nodes_apart(onnxmap, synth, tmp_path,
                                                                      label):
    """A model without subgraphs has none in subgraphs; the golden model's If holds two; nested
    Ifs count at any depth, and functions apart."""
    path = {"synth": lambda: synth, "golden": lambda: golden_model.write(tmp_path),
            "nested": lambda: nested_model(tmp_path)}[label]()
    proto = onnx.load(str(path), load_external_data=False)
    want = {"nodes": len(proto.graph.node),
            "subgraph_nodes": onnx_subgraph_nodes(proto.graph.node),
            "function_nodes": sum(len(f.node) + onnx_subgraph_nodes(f.node)
                                  for f in proto.functions)}
    with Viewer(onnxmap.path, path) as v:
        s = v.get("/api/summary")
    got = {k: s.get(k) for k in want}
    assert got == want
    assert "nodes_all" not in s
    expected = {"synth": (0, 0), "golden": (2, 0), "nested": (4, 2)}[label]
    assert (got["subgraph_nodes"], got["function_nodes"]) == expected, got
    if label == "golden":
        assert s["inputs"] == [{"name": "x", "type": "FLOAT[batch, 2]"}], s["inputs"]


def test_heatmap_cells_are_the_blocks_largest_magnitudes(onnxmap, synth):
    """The largest magnitude per block, against numpy, where every row is read (rows <= height)."""
    model_proto = onnx.load(str(synth))
    t = next(t for t in model_proto.graph.initializer if len(t.dims) == 2 and t.dims[0] <= 512)
    array = numpy_helper.to_array(t).astype(np.float64)
    with Viewer(onnxmap.path, synth) as v:
        h = v.get("/api/heatmap", name=t.name, width=16, height=t.dims[0])
        one_d = v.get("/api/heatmap", name="model.norm.weight", width=8, height=8)
    rows, cols = array.shape
    want = []
    for y in range(h["height"]):
        for x in range(h["width"]):
            block = array[y * rows // h["height"]:(y + 1) * rows // h["height"],
                          x * cols // h["width"]:(x + 1) * cols // h["width"]]
            finite = np.abs(block[np.isfinite(block)])
            want.append(float(finite.max()) if finite.size else None)
    assert h["cells"] == want, f"{h['cells'][:4]} against {want[:4]}"
    assert one_d["height"] == 1, "heat map of a 1-D tensor"


def test_synth_stats_as_numpy(onnxmap, synth):
    with Viewer(onnxmap.path, synth) as v:
        status = run_stats(v, "model.layers.0.mlp.up_proj.weight")
    array = numpy_helper.to_array(onnx.load(str(synth)).graph.initializer[8])
    problems = numpy_stats.problems(status["stats"], array.astype(np.float64).reshape(-1))
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def types_viewer(onnxmap, tmp_path_factory):
    """A viewer of numpy_stats.types_model, and each tensor's values by name."""
    path, arrays = numpy_stats.types_model(tmp_path_factory.mktemp("types"))
    with Viewer(onnxmap.path, path) as v:
        yield v, arrays


@pytest.mark.parametrize("name", numpy_stats.TYPE_NAMES)
def test_dtype_stats_as_numpy(types_viewer, name):
    """Statistics by the API equal numpy's on every dtype numpy knows."""
    v, arrays = types_viewer
    status = run_stats(v, name)
    assert status["state"] == "done", status
    problems = numpy_stats.problems(status["stats"], np.asarray(arrays[name], dtype=np.float64))
    assert not problems, "\n".join(problems)
    assert len(status["stats"]["bins"]) in (0, 33), "bin edges"


@pytest.fixture(scope="module")
def big(onnxmap, tmp_path_factory):
    """A model of 4 GiB of holes, removed afterwards."""
    path = tmp_path_factory.mktemp("big") / "big.onnx"
    subprocess.run([onnxmap.path, "synth", path, "--layers", "1", "--hidden", "16384", "--vocab",
                    "131072", "--sparse"], check=True, capture_output=True)
    yield path
    path.unlink()


def test_big_model_jobs_bounded_and_cancelled(onnxmap, big):
    """At most two statistics jobs run at once; cancelled ones say so."""
    with Viewer(onnxmap.path, big) as v:
        embed = "model.embed_tokens.weight"
        first = v.get("/api/stats", "POST", name=embed)["job"]
        second = v.get("/api/stats", "POST", name="lm_head.weight")["job"]
        with pytest.raises(HttpError) as third:
            v.get("/api/stats", "POST", name=embed)
        assert third.value.status == 429, f"a third job is refused while two run: {third.value}"
        for job in (first, second):
            v.get("/api/stats", "DELETE", job=job)
        states = []
        for job in (first, second):
            while (status := v.get("/api/stats", job=job))["state"] == "running":
                time.sleep(0.02)
            states.append(status["state"])
        assert states == ["cancelled", "cancelled"], states


def test_big_model_summary(onnxmap, big):
    with Viewer(onnxmap.path, big) as v:
        assert v.get("/api/summary")["tensor_bytes"] > 4 << 30


def test_big_model_first_values_of_a_sparse_tensor_are_zeros(onnxmap, big):
    with Viewer(onnxmap.path, big) as v:
        values = v.get("/api/values", name="model.embed_tokens.weight", count=8)["values"]
    assert values == [0.0] * 8, values


def test_a_model_replaced_by_rename_keeps_serving_the_version_opened(onnxmap, tmp_path):
    """A new version saved over the model (renamed into place, its data file too) while the viewer
    runs: every tensor still answers the old bytes, and the summary says the files changed."""
    model = tmp_path / "m.onnx"

    def synth(dtype):
        subprocess.run([onnxmap.path, "synth", model, "--layers", "1", "--hidden", "64",
                        "--external-data", "--dtype", dtype], check=True, capture_output=True)
    synth("float16")
    names = [row["name"] for row in run_json(onnxmap, "ls", model)]
    with Viewer(onnxmap.path, model) as v:
        summary = v.get("/api/summary")
        assert summary["changed_on_disk"] == [], summary
        assert summary["opened_at"].endswith("Z") and summary["file_modified"].endswith("Z")
        before = {n: (v.get("/api/tensor", name=n)["dtype"],
                      v.get("/api/values", name=n, count=32)["values"]) for n in names}
        synth("bfloat16")
        summary = v.get("/api/summary")
        assert summary["changed_on_disk"] == ["m.onnx", "m.onnx.data"], summary
        after = {n: (v.get("/api/tensor", name=n)["dtype"],
                     v.get("/api/values", name=n, count=32)["values"]) for n in names}
        assert after == before, "the viewer serves another version than the one it opened"
    with Viewer(onnxmap.path, model) as fresh:
        assert fresh.get("/api/summary")["changed_on_disk"] == []
        assert fresh.get("/api/values", name=names[1], count=32)["values"] != before[names[1]][1], \
            "the new version reads the same values: the test would not see a mix"


@contextlib.contextmanager
def serving(root, log):
    """(URL of ext.onnx, port): range_server.py serving `root`, logging to `log`."""
    server = subprocess.Popen([sys.executable, str(HERE.parent / "remote" / "range_server.py"),
                               "--root", str(root), "--log", str(log)], stdout=subprocess.PIPE,
                              text=True)
    try:
        port = server.stdout.readline().strip()
        yield f"http://127.0.0.1:{port}/ok/ext.onnx", port
    finally:
        server.terminate()
        server.wait()


@pytest.fixture(scope="module")
def ext_folder(onnxmap, tmp_path_factory):
    """A folder holding ext.onnx, a model with external data."""
    folder = tmp_path_factory.mktemp("remote")
    subprocess.run([onnxmap.path, "synth", folder / "ext.onnx", "--layers", "2", "--hidden",
                    "64", "--external-data"], check=True, capture_output=True)
    return folder


@pytest.fixture
def server(ext_folder, tmp_path):
    """(URL, port, request log) of a range server started for this case alone."""
    with serving(ext_folder, tmp_path / "requests.log") as (url, port):
        yield url, port, tmp_path / "requests.log"


def data_bytes_fetched(port, log):
    """Bytes the range server sent from external data files, once it has logged every answer;
    not the one-byte probes (`bytes=0-0`) that learn a file's size and validators."""
    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
        f"http://127.0.0.1:{port}/quiet/", timeout=60).close()
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return sum(e["sent"] for e in entries
               if e["path"].endswith(".data") and e.get("range") != "bytes=0-0")


def test_by_url_a_page_fetches_what_it_shows(onnxmap, server, ext_folder):
    """The metadata pages fetch no tensor byte, the first values a tensor's first rows, not the
    file."""
    url, port, log = server
    with Viewer(onnxmap.path, url) as v:
        for path in ("/api/summary", "/api/warnings", "/api/tensors?limit=1000", "/api/graph",
                     "/api/graph?node=20", "/api/nodes", "/api/node?id=3",
                     "/api/tensor?name=lm_head.weight"):
            v.get(path)
        metadata = data_bytes_fetched(port, log)
        assert metadata == 0, \
            f"by URL, the summary, tables, graph and tensor pages fetch no tensor byte: {metadata}"
        v.get("/api/values", name="model.layers.0.mlp.up_proj.weight", count=8)
        values = data_bytes_fetched(port, log) - metadata
        size = (ext_folder / "ext.onnx.data").stat().st_size
        assert 0 < values <= 70000 and values < size // 4, \
            f"by URL, the first values fetch a small part of the data file: {(values, size)}"


def test_page_does_not_show_a_urls_user_and_password(onnxmap, server):
    url = server[0]
    with Viewer(onnxmap.path, url.replace("http://", "http://someone:secret@")) as v:
        source = v.get("/api/summary")["source"]
    assert source == url, source


@pytest.fixture(scope="module")
def local_and_remote(onnxmap, ext_folder, tmp_path_factory):
    """Viewers of ext.onnx, one of the file and one by URL."""
    log = tmp_path_factory.mktemp("log") / "requests.log"
    with serving(ext_folder, log) as (url, _), Viewer(onnxmap.path, ext_folder / "ext.onnx") \
            as local, Viewer(onnxmap.path, url) as by_url:
        yield local, by_url


@pytest.mark.parametrize("path", ["/api/summary", "/api/tensors?limit=1000", "/api/graph",
                                  "/api/graph?node=20", "/api/graph?level=g:model.&open=",
                                  "/api/values?name=lm_head.weight&count=100",
                                  "/api/heatmap?name=lm_head.weight&width=32&height=32"])
def test_by_url_as_local(local_and_remote, path):
    local, by_url = local_and_remote
    a, b = local.get(path), by_url.get(path)
    # What names the source and when it was opened; a URL has no file modification time.
    for key in ("source", "opened_at", "file_modified"):
        a.pop(key, None), b.pop(key, None)
    assert a == b


def test_statistics_by_url_as_local(local_and_remote):
    local, by_url = local_and_remote
    assert run_stats(local, "lm_head.weight")["stats"] == \
        run_stats(by_url, "lm_head.weight")["stats"]
