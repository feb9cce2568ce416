"""The graph page's layout by Graphviz's `dot` program, one process a drawing
(tools/onnxmap/viewer/graph_layout.hpp): a layout past `--layout-time-limit` is abandoned (dot
killed) for the column drawing with a note, a dot that is killed, crashes, fails or is missing
costs that one drawing (the next is dot's again), no dot process outlives its drawing, and the
viewer answers other requests while a layout runs. And subgraphs: the values a subgraph reads
from the graphs around it are drawn as its inputs; the node list and node pages cover its nodes;
a tensor name two subgraphs both use names two tensors.
"""
import os
import shutil
import signal
import stat
import threading
import time

import onnx
import pytest
from onnx import TensorProto, helper

import graph_geometry
import graph_models
from viewer import Viewer

DENSE = 90  # nodes, each reading every earlier one: dot takes tens of seconds on them all


def dense_model(path):
    """x -> n0 -> ... -> n89, node k a Sum of x and every earlier node's output."""
    nodes = [helper.make_node("Sum", ["x"] + [f"v{j}" for j in range(k)], [f"v{k}"], name=f"sum{k}")
             for k in range(DENSE)]
    graph = helper.make_graph(nodes, "dense",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info(f"v{DENSE - 1}", TensorProto.FLOAT, [2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    return dense_model(tmp_path_factory.mktemp("dense") / "dense.onnx")


def with_dot(folder, script):
    """An environment whose PATH finds, first, a `dot` in `folder` that runs the shell `script`
    (None: no `dot` there, and nothing else on PATH)."""
    folder.mkdir(exist_ok=True)
    if script is None:
        return dict(os.environ, PATH=str(folder))
    dot = folder / "dot"
    dot.write_text("#!/bin/sh\n" + script + "\n")
    dot.chmod(dot.stat().st_mode | stat.S_IXUSR)
    return dict(os.environ, PATH=f"{folder}:{os.environ.get('PATH', '')}")


def children(viewer):
    """The pids of the viewer's child processes (its running dot processes)."""
    pids = []
    task_dir = f"/proc/{viewer.process.pid}/task"
    for task in os.listdir(task_dir):
        try:
            with open(f"{task_dir}/{task}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except FileNotFoundError:  # a thread that ended since the listing
            pass
    return pids


def no_children_left(viewer, timeout=30):
    """Whether the viewer's child processes are all gone within `timeout` seconds (a layout of
    the warm-up may still be running when a test's request has been answered)."""
    deadline = time.monotonic() + timeout
    while children(viewer) and time.monotonic() < deadline:
        time.sleep(0.01)
    return children(viewer) == []


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wait_until_computing(viewer, timeout=60):
    """The pid of a dot process that is using CPU (laying a drawing out) once one is."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in children(viewer):
            try:
                if cpu_ticks(pid) > 1:
                    return pid
            except FileNotFoundError:  # ended since the listing
                pass
        time.sleep(0.005)
    raise AssertionError("no dot process started computing")


def assert_sound(drawing):
    """The geometry judge's checks (boxes apart and inside their clusters, clusters apart, each
    edge a spline from its box to its box through no other), and the graph's input on top."""
    assert graph_geometry.problems(drawing) == []
    x = next(b for b in drawing["boxes"] if b["kind"] == "input")
    assert x["y"] == min(b["y"] for b in drawing["boxes"])


def in_thread(fn):
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("answer", fn()))
    thread.start()
    return thread, result


def every_range_open(viewer):
    """The first drawing's `open` query with each of its ranges and clusters opened: the dense
    model's 90 boxes at once (its first drawing cuts them into ranges, which dot lays out in
    tens of milliseconds; all 90 take it more than 30 s)."""
    first = viewer.get("/api/graph")
    ids = [b["id"] for b in first["boxes"] if b["kind"] == "range"]
    return "\n".join(ids + [c["id"] for c in first["clusters"]])


def test_layout_past_the_limit_is_a_column(onnxmap, dense):
    with Viewer(onnxmap, dense, "--layout-time-limit", "0.05") as v:
        d = v.get("/api/graph", open=every_range_open(v))
        assert d["layout"] == "column", d["layout"]
        assert len(d["boxes"]) >= DENSE, len(d["boxes"])
        assert d["layout_note"] == (f"Graphviz took longer than 50 ms to lay out these "
                                    f"{len(d['boxes'])} boxes: drawn as a column"), d["layout_note"]
        assert len(d["boxes"]) > 3 and len(d["edges"]) > 3
        assert_sound(d)
        assert v.get("/api/summary"), "still serving"
        assert no_children_left(v), "the late dot is killed and reaped"


def test_column_drawing_of_clusters(onnxmap, tmp_path):
    """Unfolded boxes in the column: clusters around their boxes, nothing overlapping, no edge
    through a box. The dot here never answers, so every drawing is the column."""
    model = tmp_path / "torch.onnx"
    graph_models.write("torch", str(model))
    env = with_dot(tmp_path / "bin", "exec sleep 600")
    with Viewer(onnxmap, model, "--layout-time-limit", "0.2", env=env) as v:
        first = v.get("/api/graph")
        folded = [b["id"] for b in first["boxes"] if b["kind"] in ("group", "repeat", "range")]
        assert folded, first["boxes"]
        d = v.get("/api/graph", open="\n".join(folded))
        assert d["layout"] == "column" and d["clusters"], (d["layout"], d["open"])
        assert "took longer than 200 ms" in d["layout_note"], d["layout_note"]
        assert_sound(d)


@pytest.mark.parametrize("script, note", [
    ("cat >/dev/null; kill -SEGV $$", "Graphviz's dot ended by signal 11 (Segmentation fault)"),
    ("cat >/dev/null; echo 'Error: out of memory' >&2; exit 3",
     "Graphviz's dot failed (exit status 3): Error: out of memory"),
    ("cat >/dev/null; echo '{\"bb\": \"0,0\"}'", "Graphviz's dot answered what the viewer cannot read"),
    (None, "Graphviz's dot could not be run (dot did not start: No such file or directory"),
])
def test_a_dot_that_fails_costs_its_drawing(onnxmap, dense, tmp_path, script, note):
    env = with_dot(tmp_path / "bin", script)
    with Viewer(onnxmap, dense, env=env) as v:
        d = v.get("/api/graph")
        assert d["layout"] == "column" and d["layout_note"].startswith(note), d["layout_note"]
        assert d["layout_note"].endswith(": drawn as a column")
        assert_sound(d)
        assert v.get("/api/summary") and no_children_left(v)


def test_dot_killed_mid_layout_costs_one_drawing(onnxmap, dense):
    with Viewer(onnxmap, dense, "--layout-time-limit", "120") as v:
        assert v.get("/api/graph")["layout"] == "spline"  # dot's
        # The first drawing is kept (test_first_drawing_laid_out_once): ask for another.
        thread, result = in_thread(lambda: v.get("/api/graph", node=5))
        victim = wait_until_computing(v)
        os.kill(victim, signal.SIGSTOP)  # held mid-layout, however fast dot is here
        # Meanwhile the viewer answers.
        assert v.get("/api/summary") and "rows" in v.get("/api/tensors")
        os.kill(victim, signal.SIGKILL)
        thread.join(60)
        d = result["answer"]
        assert d["layout"] == "column" and "signal 9" in d["layout_note"], d["layout_note"]
        assert_sound(d)
        again = v.get("/api/graph", node=5)
        assert again["layout"] == "spline" and again["layout_note"] == ""
        assert victim not in children(v)


def test_other_requests_answered_during_a_long_layout(onnxmap, dense):
    with Viewer(onnxmap, dense, "--layout-time-limit", "120") as v:
        v.get("/api/graph")
        thread, result = in_thread(lambda: v.get("/api/graph", node=5))
        # dot is held mid-layout, so the layout cannot end before the other requests do
        # however fast dot is on this machine (a timing race otherwise: it once ended first).
        dot = wait_until_computing(v)
        os.kill(dot, signal.SIGSTOP)
        try:
            for path in ("/api/summary", "/api/tensors", "/api/nodes", "/api/node?id=3"):
                assert v.get(path)
            assert thread.is_alive() and "answer" not in result
        finally:
            os.kill(dot, signal.SIGCONT)
        thread.join(120)
        assert result["answer"]["layout"] == "spline" and result["answer"]["layout_note"] == ""
        assert no_children_left(v)


def test_first_drawing_laid_out_once(onnxmap, dense, tmp_path):
    """The viewer lays the graph page's first drawing out ahead of the first request for it; that
    request waits for the same layout (one dot run ever) and later ones get it again."""
    runs = tmp_path / "runs"
    real = shutil.which("dot")
    env = with_dot(tmp_path / "bin", f'echo run >> "{runs}"; exec "{real}" "$@"')
    with Viewer(onnxmap, dense, "--layout-time-limit", "120", env=env) as v:
        first = v.get("/api/graph")
        assert first["layout"] == "spline" and first["layout_note"] == ""
        assert v.get("/api/graph", level="g:") == first
        assert runs.read_text().split() == ["run"]
        v.get("/api/graph", node=5)  # another drawing: dot again
        assert runs.read_text().split() == ["run", "run"]


# --- subgraphs -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def subgraphs(onnxmap, tmp_path_factory):
    path = tmp_path_factory.mktemp("subgraphs") / "subgraphs.onnx"
    graph_models.write("subgraphs", str(path))
    with Viewer(onnxmap, path) as v:
        yield v


def test_outer_scope_values_are_subgraph_inputs(subgraphs):
    d = subgraphs.get("/api/graph", graph="3.then_branch")
    inputs = {b["name"]: b for b in d["boxes"] if b["kind"] == "input"}
    # then_relu reads x_proj, then_loop reads trip_count and keep_going; the Loop's own body
    # reads scale, two scopes up: drawn as read by then_loop.
    assert sorted(inputs) == ["keep_going", "scale", "trip_count", "x_proj"], sorted(inputs)
    assert all(b.get("outer") for b in inputs.values())
    index = {b["id"]: i for i, b in enumerate(d["boxes"])}
    loop = next(i for i, b in enumerate(d["boxes"]) if b.get("name") == "then_loop")
    assert any(e["from"] == index["i:scale"] and e["to"] == loop for e in d["edges"])
    body = subgraphs.get("/api/graph", graph="3.then_branch/1.body")
    assert sorted(b["name"] for b in body["boxes"] if b["kind"] == "input" and b.get("outer")) \
        == ["scale"]
    main = subgraphs.get("/api/graph")
    assert not any(b.get("outer") for b in main["boxes"])


def test_node_list_and_pages_of_a_subgraph(subgraphs):
    nodes = subgraphs.get("/api/nodes", graph="4.body")
    assert [r["name"] for r in nodes["rows"]] == ["loop_cond", "loop_add", "loop_scale"]
    node = subgraphs.get("/api/node", graph="4.body", id=2)
    assert node["node"]["name"] == "loop_scale" and node["graph"] == "4.body"
    status, body = subgraphs.request("GET", "/api/node?graph=4.body&id=3")
    assert status == 404 and b"graph 4.body" in body
    status, _ = subgraphs.request("GET", "/api/nodes?graph=9.nothing")
    assert status == 404


def test_a_name_used_by_two_graphs_is_two_tensors(onnxmap, tmp_path):
    """An If's branches may each make a tensor "w": the index of its row in /api/tensors says
    which one the tensor calls mean (api.md); without it, the first."""
    def branch(name, value):
        w = helper.make_node("Constant", [], ["w"], value=helper.make_tensor(
            "w", TensorProto.FLOAT, [2], value))
        add = helper.make_node("Add", ["x", "w"], [f"{name}_out"])
        return helper.make_graph([w, add], name, [], [helper.make_tensor_value_info(
            f"{name}_out", TensorProto.FLOAT, [2])])
    cond = helper.make_node("If", ["c"], ["y"], then_branch=branch("then", [1, 2]),
                            else_branch=branch("else", [3, 4]))
    graph = helper.make_graph([cond], "g", [
        helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    path = tmp_path / "if.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    with Viewer(onnxmap, path) as v:
        rows = [r for r in v.get("/api/tensors")["rows"] if r["name"] == "w"]
        assert len(rows) == 2, rows
        values = [v.get("/api/values", name="w", index=row["index"])["values"] for row in rows]
        assert sorted(values) == [[1, 2], [3, 4]], values
        for row in rows:
            assert v.get("/api/tensor", name="w", index=row["index"])["path"] == row["path"]
        assert v.get("/api/values", name="w")["values"] == values[0]
        status, body = v.request("GET", "/api/tensor?name=y&index=%d" % rows[1]["index"])
        assert status == 404 and b"no tensor named y at index" in body, body
        status, body = v.request("GET", "/api/values?name=w&index=two")
        assert status == 400 and b"index: not a number" in body, body
