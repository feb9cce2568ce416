"""The graph page's API, /api/graph (tools/onnxmap/viewer/api.md), judged by python3-onnx
(graph_judge.py, graph_checks.py, graph_geometry.py) on every model of the corpus, the fixtures,
synth models (a small one; a graph-heavy one of 360,003 nodes) and graph_models.py's four kinds.

Each model is walked: from the whole graph (level g:), every level is drawn on its own
(`open` empty) and each group, range and repeat box on it is drawn in turn as a level, a repeat
as each of its blocks (varying SHOWN). The boxes of every level partition the drawn nodes of what
it unfolds, so the leaves of that tree (node boxes, a repeat's children being its blocks) hold
every node of the graph exactly once, each Constant or Identity that feeds one node inside that
node. Every drawing met is checked whole (graph_checks.check_drawing): at most 150 boxes a
level, what each box says, every edge real and every crossing value an edge, the layout sound.
Then the default drawing, drawings with boxes unfolded in place (`open`), and `node=N` (locate).
Huge models are walked along a sample of blocks; their cases are marked slow.
"""
import collections
import copy
import json
import subprocess

import onnx
import pytest

import graph_judge
import graph_models
from graph_checks import LEVEL_KINDS, check_drawing
from graph_judge import GraphJudge
from graph_walk import Walk, assert_sound, subgraph_at, walk_model
from viewer import PATIENT, Viewer

def test_corpus_model(onnxmap, corpus_model):
    assert_sound(walk_model(onnxmap, corpus_model))


def test_fixture_model(onnxmap, fixture_model):
    assert_sound(walk_model(onnxmap, fixture_model))


def synth(onnxmap, path, *args):
    subprocess.run([onnxmap.path, "synth", path, *map(str, args)], check=True,
                   capture_output=True)
    return path


def level_boxes(d, cluster=-1):
    return [b for b in d["boxes"] if b["kind"] in LEVEL_KINDS and b["cluster"] == cluster]


def repeat_counts(d):
    return [b["count"] for b in level_boxes(d) if b["kind"] == "repeat"]


def test_synth_small(onnxmap, tmp_path):
    """synth --layers 3: the three layers are one repeat "x 3" at the top."""
    walk = walk_model(onnxmap, synth(onnxmap, tmp_path / "small.onnx", "--layers", 3,
                                     "--hidden", 64))
    assert_sound(walk)
    assert repeat_counts(walk.default) == [3], level_boxes(walk.default)


@pytest.fixture(scope="module")
def kind_walk(request, onnxmap, tmp_path_factory):
    """A graph_models.py kind (request.param) written and walked once per module."""
    path = tmp_path_factory.mktemp("kinds") / f"{request.param}.onnx"
    try:
        graph_models.write(request.param, str(path))
    except RuntimeError as e:  # torch absent or unable to export
        pytest.skip(str(e))
    return walk_model(onnxmap, path)


@pytest.mark.parametrize("kind_walk", ["paddle", "torch", "subgraphs"], indirect=True)
def test_graph_models_kind_walked_whole(kind_walk):
    assert_sound(kind_walk)


@pytest.mark.parametrize("kind_walk", ["paddle"], indirect=True)
def test_paddle_unnamed_nodes_fold_into_repeats(kind_walk):
    """682 unnamed nodes, 340 Constants drawn inside the node each feeds: the default drawing
    has fewer than 150 boxes, at least one of them a repeat."""
    boxes = level_boxes(kind_walk.default)
    kinds = collections.Counter(b["kind"] for b in boxes)
    assert len(boxes) <= 150 and kinds["repeat"] >= 1, kinds
    inside = sum(len(b["constants"]) + b["more_constants"] for b in boxes if b["kind"] == "node")
    assert inside > 0, "Constants are drawn inside the nodes they feed"


@pytest.mark.parametrize("kind_walk", ["torch"], indirect=True)
def test_torch_shows_the_layers(kind_walk):
    """torch.onnx.export names nodes /layers.0/..., /layers.1/...: the default drawing has the
    layers' box, "× 2" (a level wholly of two alike blocks), which unfolds into the first
    layer's parts."""
    layers = [b["id"] for b in level_boxes(kind_walk.default) if "layers" in b["id"]]
    assert layers == ["r:0:1:2:0:/layers."], layers
    inside = [b["id"] for b in kind_walk.shown["r:0:1:2:0:/layers."]]
    assert any(i.startswith("g:/layers.0/") for i in inside) and \
        not any(i.startswith("g:/layers.1/") for i in inside), inside


@pytest.fixture(scope="module")
def subgraphs_viewer(onnxmap, tmp_path_factory):
    """(a viewer, the model) of graph_models' subgraphs kind, started once per module."""
    path = tmp_path_factory.mktemp("subgraphs") / "subgraphs.onnx"
    graph_models.write("subgraphs", str(path))
    with Viewer(onnxmap.path, path, *PATIENT) as v:
        yield v, onnx.load(str(path))


def graph_paths(graph, base=""):
    """Every subgraph's path below `graph`, at any depth."""
    for i, node in enumerate(graph.node):
        for a in node.attribute:
            steps = ([(a.name, a.g)] if a.HasField("g") else []) + \
                [(f"{a.name}.{k}", g) for k, g in enumerate(a.graphs)]
            for step, g in steps:
                path = f"{base}/{i}.{step}" if base else f"{i}.{step}"
                yield path
                yield from graph_paths(g, path)


def test_subgraphs_drawn_by_path(subgraphs_viewer):
    """Each subgraph (If's branches, Loop's and Scan's bodies, the Loop inside then_branch) is
    drawn by its path and walked whole; the node boxes holding one link it."""
    v, proto = subgraphs_viewer
    paths = list(graph_paths(proto.graph))
    assert "3.then_branch/1.body" in paths and len(paths) == 5, paths
    links = [s["graph"] for b in level_boxes(v.get("/api/graph")) if b["kind"] == "node"
             for s in b["subgraphs"]]
    assert sorted(links) == sorted(p for p in paths if "/" not in p), links
    for p in paths:
        walk = Walk(v, GraphJudge(subgraph_at(proto.graph, p), nested=True), graph_path=p)
        walk.check_default()
        walk.run()
        walk.check_partition()
        walk.check_opened("g:")
        walk.check_locate(range(len(walk.judge.nodes)))
        assert_sound(walk)
        assert walk.default["graph"] == p


@pytest.mark.parametrize("path, status", [
    ("x", 400), ("0.", 404), ("99999.body", 404), ("0.nonexistent", 404), ("/", 400),
    ("3.then_branch/", 400), ("3.then_branch/9.body", 404), ("4.body.0", 404),
    ("3.then_branch/1.body/0.body", 404), ("3.then_branch/1.body/x", 400),
    ("3.then_branch" + "/0.body" * 200, 400), ("-1.body", 400), ("3.then_branch.x", 404)])
def test_subgraph_bad_path(subgraphs_viewer, path, status):
    """A path that is malformed (400) or names no subgraph (404), answered with a JSON error;
    the viewer serves on."""
    v = subgraphs_viewer[0]
    got, body = v.request("GET", "/api/graph?graph=" + path.replace("/", "%2F"))
    assert got == status and "error" in json.loads(body), (got, body[:200])
    assert v.get("/api/graph", graph="3.then_branch")["boxes"], "still serving"


def clash_model(folder):
    """Names that collide with the OpType#INDEX names of unnamed nodes, and a node named like
    a group's prefix."""
    h = onnx.helper
    nodes = [h.make_node("Relu", ["x"], ["a"]), h.make_node("Relu", ["a"], ["b"], name="Relu#0"),
             h.make_node("Neg", ["b"], ["c"], name="m."), h.make_node("Neg", ["c"], ["d"],
                                                                        name="m.x"),
             h.make_node("Neg", ["d"], ["e"], name="m.x")]
    graph = h.make_graph(nodes, "clash", [h.make_tensor_value_info("x", 1, [2])],
                         [h.make_tensor_value_info("e", 1, [2])])
    path = folder / "clash.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 13)]), str(path))
    return path


def test_clashing_names_every_node_reached(onnxmap, tmp_path):
    """Node 1 named "Relu#0", as unnamed node 0 is called: both are reached, each once."""
    assert_sound(walk_model(onnxmap, clash_model(tmp_path)))


# Nodes located at random in the huge models: each drawing's check reads every node (about a
# second), and the search is the smaller models' (where every node is located).
LOCATE_IN_HUGE = 12


@pytest.mark.slow
def test_graph_heavy_360003_nodes(onnxmap, tmp_path):
    """synth --layers 20000: a repeat of the 20,000 layers at the top (its wrappers model. and
    model.layers. opened, the layers are units of the first level after the embedding), walked
    along a sample of blocks and levels."""
    path = synth(onnxmap, tmp_path / "heavy.onnx", "--layers", 20000, "--hidden", 4, "--vocab",
                 16)
    walk = walk_model(onnxmap, path, sample=True, locate=LOCATE_IN_HUGE)
    assert_sound(walk)
    blocks = [x for x in walk.levels if x.startswith("r:1:1:20000:")]
    assert len(walk.judge.nodes) == 360_003 and len(blocks) == 4, walk.levels
    assert repeat_counts(walk.default) == [20_000], level_boxes(walk.default)


@pytest.mark.slow
def test_flat_300001_nodes(onnxmap, tmp_path):
    """graph_models' flat kind: 20,000 layers of flat-named nodes fold by structure into a
    repeat of about 20,000 in a drawing of at most 30 boxes."""
    path = tmp_path / "flat.onnx"
    graph_models.write("flat", str(path))
    walk = walk_model(onnxmap, path, sample=True, locate=LOCATE_IN_HUGE)
    assert_sound(walk)
    boxes, counts = level_boxes(walk.default), repeat_counts(walk.default)
    assert len(boxes) <= 30 and counts and max(counts) >= graph_models.FLAT_LAYERS - 2, \
        (len(boxes), counts)
    run = max((b for b in boxes if b["kind"] == "repeat"), key=lambda b: b["count"])
    assert run["first"] == "n0_LayerNormalization", run  # where the first layer starts
    assert len(walk.levels) >= 5, walk.levels


def through(boxes, edge):
    """Points of an edge from the bottom of its from box through the middle of another box to
    the top of its to box."""
    a, b = boxes[edge["from"]], boxes[edge["to"]]
    other = next(x for k, x in enumerate(boxes) if k not in (edge["from"], edge["to"]))
    start, end = [a["x"] + 5, a["y"] + a["height"]], [b["x"] + 5, b["y"]]
    middle = [other["x"] + other["width"] / 2, other["y"] + other["height"] / 2]
    return [start, start, middle, middle, middle, end, end]


def test_the_judge_finds_wrong_drawings(onnxmap, tmp_path):
    """graph_checks reports a drawing altered in each way it checks (so the cases above can
    fail): two sound drawings of synth models, one with a group unfolded in place, one with a
    repeat box, each altered in one way."""
    drawings = {}
    for layers, query in ((2, {"open": "g:model.layers.0."}), (3, {})):
        path = synth(onnxmap, tmp_path / f"l{layers}.onnx", "--layers", layers, "--hidden", 64)
        judge = GraphJudge(onnx.load(str(path), load_external_data=False).graph)
        with Viewer(onnxmap.path, path, *PATIENT) as v:
            drawings[layers] = judge, v.get("/api/graph", **query)
        assert check_drawing(*drawings[layers]) == [], f"--layers {layers}: sound as drawn"
    d, r = drawings[2][1], drawings[3][1]
    boxes, edges = d["boxes"], d["edges"]
    node = next(k for k, b in enumerate(boxes) if b["kind"] == "node" and b["weights"])
    run = next(k for k, b in enumerate(r["boxes"]) if b["kind"] == "repeat")
    group = next(k for k, b in enumerate(boxes) if b["kind"] == "group")
    changes = {
        "a box dropped": (2, lambda c: c["boxes"].pop(1)),
        "an edge dropped": (2, lambda c: c["edges"].pop()),
        "an edge reversed": (2, lambda c: c["edges"][-1].update(
            {"from": edges[-1]["to"], "to": edges[-1]["from"]})),
        "a count off": (2, lambda c: c["edges"][0].update(count=edges[0]["count"] + 1)),
        "a value not carried": (2, lambda c: c["edges"][0]["values"][0].update(
            name="lm_head.weight")),
        "a weight's type": (2, lambda c: c["boxes"][node]["weights"][0].update(type="FLOAT[1]")),
        "boxes on each other": (2, lambda c: c["boxes"][1].update(x=boxes[0]["x"],
                                                                  y=boxes[0]["y"])),
        "a box out of the drawing": (2, lambda c: c["boxes"][0].update(x=d["width"])),
        "an edge through a box": (2, lambda c: c["edges"][0].update(
            points=through(boxes, edges[0]))),
        "a group's node count": (2, lambda c: c["boxes"][group].update(
            nodes=boxes[group]["nodes"] + 1)),
        "a cluster too small": (2, lambda c: c["clusters"][0].update(width=10)),
        "open not the clusters": (2, lambda c: c.update(open=[])),
        "found no box": (2, lambda c: c.update(found="n:99")),
        "a repeat's count": (3, lambda c: c["boxes"][run].update(count=4)),
        "a repeat's first block": (3, lambda c: c["boxes"][run].update(first="1.")),
    }
    missed = []
    for what, (layers, change) in changes.items():
        judge, drawing = drawings[layers]
        changed = copy.deepcopy(drawing)
        change(changed)
        if not check_drawing(judge, changed):
            missed.append(what)
    assert not missed, f"the judge found nothing wrong with: {missed}"
    assert graph_judge.type_text(onnx.helper.make_tensor_type_proto(10, [64, "n"])) == \
        "FLOAT16[64, n]"
