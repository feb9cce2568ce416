#!/usr/bin/python3
"""The viewer's JSON API (tools/onnxmap/viewer/api.md) against `onnxmap info --stats --json`,
`ls --json`, `check --json`, python3-onnx and numpy, on synthetic models (inline and external
data, every numeric dtype) and every model of the corpus; then a model of 4 GiB of holes
(statistics cancelled, jobs bounded) and a model read over HTTP.

    view_api_test.py PATH/TO/onnxmap CORPUS_DIR
"""
import json
import pathlib
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "cli"), str(HERE.parent / "conformance")]
import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from onnx import helper  # noqa: E402

import corpus_sample  # noqa: E402
import golden_model  # noqa: E402
import numpy_stats  # noqa: E402
from viewer import HttpError, Viewer  # noqa: E402

ONNXMAP = sys.argv[1]
CORPUS = pathlib.Path(sys.argv[2])
results = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    if not condition:
        print("FAIL " + name + ": " + str(detail)[:600])


def run_json(*args):
    r = subprocess.run([ONNXMAP, *map(str, args), "--json"], capture_output=True, text=True)
    return json.loads(r.stdout)


def all_rows(v, **query):
    rows = []
    while True:
        page = v.get("/api/tensors", offset=len(rows), limit=1000, **query)
        rows += page["rows"]
        if len(rows) >= page["matched"] or not page["rows"]:
            return rows


def check_summary(v, model, label):
    info = run_json("info", model, "--stats")
    s = v.get("/api/summary")
    same = [k for k in info if k != "stats" and s.get(k) != info[k]]
    check(f"{label}: summary as info --json", not same, same)
    stats = info["stats"]
    check(f"{label}: counts as info --stats", (s["tensors"], s["by_dtype"], s["op_types"]) ==
          (stats["tensors"], stats["by_dtype"], stats["nodes_by_op_type"]))
    storage_bytes = sum(e["bytes"] for e in s["by_storage"].values())
    dtype_bytes = sum(e["bytes"] for e in s["by_dtype"].values())
    check(f"{label}: bytes by storage and by dtype add up", storage_bytes == dtype_bytes ==
          s["tensor_bytes"], (storage_bytes, dtype_bytes, s["tensor_bytes"]))
    problems = run_json("check", model)["problems"]
    warnings = v.get("/api/warnings")["warnings"]
    check(f"{label}: warnings are check's findings", len(warnings) == len(problems),
          (warnings, problems))
    return s


def check_tensors(v, model, label):
    listed = run_json("ls", model)
    rows = all_rows(v)
    plain = [{k: x for k, x in r.items() if k not in ("index", "elements")} for r in rows]
    check(f"{label}: tensor rows are ls --json's", plain == listed, (plain[:2], listed[:2]))
    check(f"{label}: elements are the product of dims",
          all(r["elements"] == int(np.prod(r["dims"], dtype=np.int64)) for r in rows))
    for sort, ls_sort in (("name", "name"), ("offset", "offset")):
        got = [r["path"] for r in all_rows(v, sort=sort)]
        want = [r["path"] for r in run_json("ls", model, "--sort", ls_sort)]
        check(f"{label}: sort={sort} as ls --sort {ls_sort}", got == want)
    by_bytes = [r["bytes"] for r in all_rows(v, sort="bytes", order="desc")]
    check(f"{label}: sort=bytes desc", by_bytes == sorted((r["bytes"] for r in listed), reverse=True))
    for glob in ("*.weight", "*a*", "[a-m]*"):
        got = [r["path"] for r in all_rows(v, filter=glob)]
        want = [r["path"] for r in run_json("ls", model, "--filter", glob)]
        check(f"{label}: filter {glob} as ls --filter", got == want)
    leaves, total = treemap_leaves(v, "")
    check(f"{label}: the treemap holds every tensor's bytes once",
          total == sum(r["bytes"] for r in listed) and leaves == len(listed), (leaves, total))


def treemap_leaves(v, prefix):
    """(tensors, bytes) reached by unfolding the treemap from `prefix`."""
    m = v.get("/api/treemap", prefix=prefix)
    tensors = 0
    for child in m["children"]:
        if child.get("leaf") or child.get("others") or child.get("terminal"):
            tensors += child["tensors"]
        else:
            tensors += treemap_leaves(v, child["prefix"])[0]
    check(f"treemap {prefix!r}: children add up", sum(c["bytes"] for c in m["children"]) ==
          m["bytes"])
    return tensors, m["bytes"]


def fold_ids(v, prefix, depth=0):
    """Every node id reached by unfolding the graph from `prefix`."""
    ids, offset = [], 0
    while True:
        f = v.get("/api/fold", prefix=prefix, offset=offset, limit=1000)
        for child in f["children"]:
            if "node" in child:
                ids.append(child["node"])
            elif depth < 64:
                ids += fold_ids(v, child["prefix"], depth + 1)
        offset += len(f["children"])
        if offset >= f["total_children"]:
            return ids


def check_graph(v, model_proto, label):
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
    check(f"{label}: /api/nodes lists the graph's nodes", got == want, (got[:2], want[:2]))
    check(f"{label}: unfolding reaches every node once",
          sorted(fold_ids(v, "")) == list(range(len(nodes))))
    whole = v.get("/api/fold", limit=1000)
    if 2 <= whole["total_children"] <= 50:
        paged = [e for k in range(whole["total_children"])
                 for e in v.get("/api/fold", offset=k, limit=1)["edges"]]
        key = lambda e: (e["from"], e["to"])  # noqa: E731
        check(f"{label}: fold edges of pages of one child add up to the whole page's",
              sorted(paged, key=key) == sorted(whole["edges"], key=key), (paged, whole["edges"]))
    initializers = {t.name for t in model_proto.graph.initializer}
    for i, n in enumerate(nodes[:40]):
        page = v.get("/api/node", id=i)
        check(f"{label}: node {i} attributes", [a["name"] for a in page["node"]["attributes"]] ==
              [a.name for a in n.attribute])
        check(f"{label}: node {i} tensor links", page["tensors"] ==
              [x for x in n.input if x in initializers])
        by_id = {x["id"]: x for x in page["neighbourhood"]["nodes"]}
        bad = [e for e in page["neighbourhood"]["edges"]
               if e["tensor"] not in nodes[e["to"]].input or e["tensor"] not in nodes[e["from"]].output]
        check(f"{label}: node {i} neighbourhood edges", not bad and by_id[i]["distance"] == 0, bad)


def expected_values(array, count=64):
    flat = array.reshape(-1)[:count]
    if flat.dtype.kind in "SUO":
        return [x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in flat]
    if flat.dtype.kind == "c":
        return [[expected_number(x.real), expected_number(x.imag)] for x in flat]
    return [expected_number(x) for x in flat.astype(np.float64)]


def expected_number(x):
    if np.isnan(x):
        return "nan"
    return ("inf" if x > 0 else "-inf") if np.isinf(x) else float(x)


def check_values(v, model_proto, label):
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
        check(f"{label}: first values of {t.name}", same, (got[:4], want[:4]))


def run_stats(v, name, bins=32):
    job = v.get("/api/stats", "POST", name=name, bins=bins)["job"]
    while True:
        status = v.get("/api/stats", job=job)
        if status["state"] != "running":
            return status
        time.sleep(0.02)


def check_dtype_stats(folder):
    """Statistics by the API equal numpy's on every dtype numpy knows."""
    path, arrays = numpy_stats.types_model(folder)
    with Viewer(ONNXMAP, path) as v:
        for name, values in arrays.items():
            status = run_stats(v, name)
            check(f"stats of {name} done", status["state"] == "done", status)
            if status["state"] == "done":
                numpy_stats.expect(check, f"view stats of {name}", status["stats"],
                                   np.asarray(values, dtype=np.float64))
                edges = status["stats"]["bins"]
                check(f"{name}: bin edges", len(edges) in (0, 33))


def check_heatmap(v, model_proto):
    """The largest magnitude per block, against numpy, where every row is read (rows <= height)."""
    t = next(t for t in model_proto.graph.initializer if len(t.dims) == 2 and t.dims[0] <= 512)
    array = numpy_helper.to_array(t).astype(np.float64)
    h = v.get("/api/heatmap", name=t.name, width=16, height=t.dims[0])
    rows, cols = array.shape
    want = []
    for y in range(h["height"]):
        for x in range(h["width"]):
            block = array[y * rows // h["height"]:(y + 1) * rows // h["height"],
                          x * cols // h["width"]:(x + 1) * cols // h["width"]]
            finite = np.abs(block[np.isfinite(block)])
            want.append(float(finite.max()) if finite.size else None)
    check("heat map cells are the blocks' largest magnitudes", h["cells"] == want,
          (h["cells"][:4], want[:4]))
    check("heat map of a 1-D tensor", v.get("/api/heatmap", name="model.norm.weight",
                                            width=8, height=8)["height"] == 1)


def check_model(path, label, deep=True):
    model_proto = onnx.load(str(path), load_external_data=False)
    with Viewer(ONNXMAP, path) as v:
        check_summary(v, path, label)
        check_tensors(v, path, label)
        check_graph(v, model_proto, label)
        if deep:
            check_values(v, model_proto, label)
        code = v.stop()
    check(f"{label}: the viewer stops on Ctrl-C with status 0", code == 0, v.stderr)


def check_corpus():
    models = sorted(CORPUS.glob("**/*.onnx")) if CORPUS.is_dir() else []
    if not models:
        print(f"SKIP corpus: {CORPUS} is absent (the corpus lives in ../shared beside a checkout)")
        return
    for path in corpus_sample.sample(models):
        check_model(path, str(path.relative_to(CORPUS)))
    print(f"corpus: {len(models)} models viewed")


def check_big_model(folder):
    """4 GiB of holes: statistics report progress and cancel; at most two jobs run at once."""
    path = folder / "big.onnx"
    subprocess.run([ONNXMAP, "synth", path, "--layers", "1", "--hidden", "16384", "--vocab",
                    "131072", "--sparse"], check=True, capture_output=True)
    with Viewer(ONNXMAP, path) as v:
        big = "model.embed_tokens.weight"
        first = v.get("/api/stats", "POST", name=big)["job"]
        second = v.get("/api/stats", "POST", name="lm_head.weight")["job"]
        try:
            v.get("/api/stats", "POST", name=big)
            check("a third job is refused while two run", False)
        except HttpError as e:
            check("a third job is refused while two run", e.status == 429, e)
        for job in (first, second):
            v.get("/api/stats", "DELETE", job=job)
        states = []
        for job in (first, second):
            while (status := v.get("/api/stats", job=job))["state"] == "running":
                time.sleep(0.02)
            states.append(status["state"])
        check("cancelled jobs say so", states == ["cancelled", "cancelled"], states)
        check("the summary of a 4 GiB model", v.get("/api/summary")["tensor_bytes"] > 4 << 30)
        values = v.get("/api/values", name=big, count=8)["values"]
        check("first values of a sparse tensor are zeros", values == [0.0] * 8, values)


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


def check_node_counts(folder):
    """The summary counts the nodes of the main graph, of its subgraphs and of functions apart:
    a model without subgraphs has none in subgraphs; the golden model's If holds two."""
    models = {"synth": folder / "model.onnx", "golden": golden_model.write(folder),
              "nested": nested_model(folder)}
    for label, path in models.items():
        proto = onnx.load(str(path), load_external_data=False)
        want = {"nodes": len(proto.graph.node),
                "subgraph_nodes": onnx_subgraph_nodes(proto.graph.node),
                "function_nodes": sum(len(f.node) + onnx_subgraph_nodes(f.node)
                                      for f in proto.functions)}
        with Viewer(ONNXMAP, path) as v:
            s = v.get("/api/summary")
        got = {k: s.get(k) for k in want}
        check(f"{label}: node counts of the main graph, subgraphs and functions", got == want,
              (got, want))
        check(f"{label}: no count of nodes mixes the parts", "nodes_all" not in s)
        if label == "synth":
            check("synth: no nodes in subgraphs", s["subgraph_nodes"] == 0, s["subgraph_nodes"])
        if label == "golden":
            check("golden: the If's two branches hold two nodes", got["subgraph_nodes"] == 2, got)
            check("golden: input types spelled as info spells them",
                  s["inputs"] == [{"name": "x", "type": "FLOAT[batch, 2]"}], s["inputs"])
        if label == "nested":
            check("nested: subgraphs at any depth, functions apart",
                  (got["subgraph_nodes"], got["function_nodes"]) == (4, 2), got)


def data_bytes_fetched(port, log):
    """Bytes the range server sent from external data files, once it has logged every answer;
    not the one-byte probes (`bytes=0-0`) that learn a file's size and validators."""
    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
        f"http://127.0.0.1:{port}/quiet/", timeout=60).close()
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return sum(e["sent"] for e in entries
               if e["path"].endswith(".data") and e.get("range") != "bytes=0-0")


def check_remote_fetches(url, port, log):
    """By URL, a page fetches what it shows: the metadata pages no tensor byte, the first values
    a tensor's first rows, not the file."""
    with Viewer(ONNXMAP, url) as v:
        for path in ("/api/summary", "/api/warnings", "/api/tensors?limit=1000", "/api/fold",
                     "/api/nodes", "/api/node?id=3", "/api/tensor?name=lm_head.weight"):
            v.get(path)
        metadata = data_bytes_fetched(port, log)
        check("by URL, the summary, tables, graph and tensor pages fetch no tensor byte",
              metadata == 0, metadata)
        v.get("/api/values", name="model.layers.0.mlp.up_proj.weight", count=8)
        values = data_bytes_fetched(port, log) - metadata
        size = (log.parent / "ext.onnx.data").stat().st_size
        check("by URL, the first values fetch a small part of the data file",
              0 < values <= 70000 and values < size // 4, (values, size))


def check_remote(folder):
    """A model with external data viewed by URL answers as the local file does."""
    subprocess.run([ONNXMAP, "synth", folder / "ext.onnx", "--layers", "2", "--hidden", "64",
                    "--external-data"], check=True, capture_output=True)
    server = subprocess.Popen([sys.executable, str(HERE.parent / "remote" / "range_server.py"),
                               "--root", str(folder), "--log", str(folder / "requests.log")], stdout=subprocess.PIPE, text=True)
    try:
        port = server.stdout.readline().strip()
        url = f"http://127.0.0.1:{port}/ok/ext.onnx"
        check_remote_fetches(url, port, folder / "requests.log")
        with Viewer(ONNXMAP, url.replace("http://", "http://someone:secret@")) as v:
            source = v.get("/api/summary")["source"]
            check("the page does not show a URL's user and password", source == url, source)
        with Viewer(ONNXMAP, folder / "ext.onnx") as local, Viewer(ONNXMAP, url) as remote:
            for path in ("/api/summary", "/api/tensors?limit=1000", "/api/fold",
                         "/api/values?name=lm_head.weight&count=100",
                         "/api/heatmap?name=lm_head.weight&width=32&height=32"):
                a, b = local.get(path), remote.get(path)
                a.pop("source", None), b.pop("source", None)
                check(f"by URL as local: {path}", a == b, (a, b))
            check("statistics by URL as local", run_stats(local, "lm_head.weight")["stats"] ==
                  run_stats(remote, "lm_head.weight")["stats"])
    finally:
        server.terminate()
        server.wait()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        synth = folder / "model.onnx"
        subprocess.run([ONNXMAP, "synth", synth, "--layers", "3", "--hidden", "64"], check=True,
                       capture_output=True)
        check_model(synth, "synth")
        with Viewer(ONNXMAP, synth) as v:
            check_heatmap(v, onnx.load(str(synth)))
            status = run_stats(v, "model.layers.0.mlp.up_proj.weight")
            array = numpy_helper.to_array(onnx.load(str(synth)).graph.initializer[8])
            numpy_stats.expect(check, "synth stats", status["stats"],
                               array.astype(np.float64).reshape(-1))
        check_dtype_stats(folder)
        check_node_counts(folder)
        check_big_model(folder)
        check_remote(folder)
    check_corpus()
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
