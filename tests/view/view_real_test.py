"""The graph page judged on real exporters' models (real_models.py: PaddleOCR by paddle2onnx, an
IS-Net segmentation network exported by torch and quantized by ONNX Runtime, tf2onnx's and
torch's wake-word models, Silero VAD), beside the synthetic ones of view_graph_test.py.

Each model is walked whole (graph_walk.py): every level and every box unfolded once, each
drawing judged by graph_checks, which asserts among the rest that the drawing is a DAG whose
edges point down, that every folded box is convex and that no group is named after an op type.
Then what a person should see on the model's first level.

The models are fetched once into ONNXMAP_REAL_MODELS (the build's tests/real-models; a
temporary folder without it) with npm; without npm or the registry the cases skip, saying
why, except under CI=1, where they fail.
"""
import os

import pytest

import real_models
from graph_checks import LEVEL_KINDS
from graph_walk import assert_sound, walk_model
from viewer import Viewer

IDS = [m.id for m in real_models.MODELS]


@pytest.fixture(scope="session")
def real_paths(tmp_path_factory):
    """{id: path} of the real models, fetched where missing (the xdist workers take turns)."""
    return real_models.fetch_for_tests(os.environ.get("ONNXMAP_REAL_MODELS")
                                       or tmp_path_factory.getbasetemp().parent / "real-models")


def first_level(onnxmap, path):
    """The level boxes of the first level, nothing unfolded."""
    with Viewer(onnxmap.path, path) as v:
        d = v.get("/api/graph", level="g:", open="")
    return [b for b in d["boxes"] if b["kind"] in LEVEL_KINDS]


@pytest.mark.parametrize("model_id", IDS)
def test_real_model_walked_whole(onnxmap, real_paths, model_id):
    assert_sound(walk_model(onnxmap, real_paths[model_id]))


@pytest.mark.parametrize("model_id", ["ppocr-v4-det", "ppocr-v4-rec", "ppocr-cls"])
def test_paddle_counters_make_no_groups(onnxmap, real_paths, model_id):
    """p2o.Conv.12 is a label: no group per op type; the first level is the network's blocks
    as structure finds them (runs and ranges), not a cycle of "Conv.", "Add.", "Mul."."""
    boxes = first_level(onnxmap, real_paths[model_id])
    groups = [b["id"] for b in boxes if b["kind"] == "group"]
    assert not any(g.rstrip(".").split(".")[-1] in ("Conv", "Add", "Mul", "Relu")
                   for g in groups), groups
    assert 2 <= len(boxes) <= 150, [b["id"] for b in boxes]


def test_quantized_segmentation_reads_as_its_stages(onnxmap, real_paths):
    """IS-Net, quantized by ONNX Runtime: the bias Reshapes are drawn in the Adds that read
    them, the first level is the network's stages (its module paths), and a quantized
    convolution's boxes say so."""
    path = real_paths["isnet-quint8"]
    boxes = first_level(onnxmap, path)
    ids = [b["id"] for b in boxes]
    assert not any(b["kind"] == "node" and b["op"] == "Reshape" for b in boxes), ids
    assert {"g:/stage1/", "g:/stage2/", "g:/stage6/"} <= set(ids), ids
    assert len(boxes) <= 60, ids  # stages, pools, side outputs, the decoder: 45
    with Viewer(onnxmap.path, path) as v:
        conv = v.get("/api/graph", level="g:/conv_in/", open="")
    quantized = [b["op"] for b in conv["boxes"] if b["kind"] == "node" and b["quantized"]]
    assert "ConvInteger" in quantized, [(b.get("op"), b.get("quantized")) for b in
                                        conv["boxes"]]


def test_tf2onnx_scopes_are_layers(onnxmap, real_paths):
    """tf2onnx keeps TensorFlow's scopes (model/conv2d/Conv2D, model/conv2d/Conv2D__6): the
    first level is the Keras layers."""
    boxes = first_level(onnxmap, real_paths["oww-embedding"])
    titles = [b.get("title") for b in boxes if b["kind"] in ("group", "repeat", "range")]
    assert any(t and t.startswith("conv2d") for t in titles), [b["id"] for b in boxes]


def test_tf2onnx_runs_start_where_a_person_names_the_layer(onnxmap, real_paths):
    """openWakeWord's embedding model (tf2onnx): a chain of Keras layers conv2d_K/,
    leaky_re_lu_K/, tf.math.maximum_K/, a max_pooling2d/ closing each stage of four. Every cut
    of a chain crosses one edge, so the runs start where a layer starts by its name (at a
    conv2d_K/, not at the leaky_re_lu_K/ after it) and a block ends with its rarest unit (the
    pooling): the four stages of four convolutions are one run from conv2d_3/, and the first
    stage's two last convolutions one from conv2d_1/."""
    boxes = first_level(onnxmap, real_paths["oww-embedding"])
    runs = [(b["first"], b["last"], b["count"]) for b in boxes if b["kind"] == "repeat"]
    assert runs == [("conv2d_1/", "conv2d_2/", 2), ("conv2d_3/", "conv2d_15/", 4)], runs


def test_silero_inputs_reach_the_if_that_holds_the_network(onnxmap, real_paths):
    """Silero VAD keeps its network in an If's branches: what they read of the main graph (the
    audio, the recurrent state) is drawn as the If's inputs, so the first screen wires every
    graph input, not only `sr` to Equal."""
    with Viewer(onnxmap.path, real_paths["silero-vad"]) as v:
        d = v.get("/api/graph", level="g:", open="")
    boxes = d["boxes"]
    inputs = {b["id"][2:] for b in boxes if b["kind"] == "input"}
    assert inputs == {"input", "sr", "h", "c"}, inputs
    if_box = next(k for k, b in enumerate(boxes) if b.get("op") == "If")
    wired = {boxes[e["from"]]["id"][2:] for e in d["edges"] if e["to"] == if_box}
    assert {"input", "h", "c"} <= wired, wired
    with Viewer(onnxmap.path, real_paths["silero-vad"]) as v:
        node = v.get("/api/node", id=boxes[if_box]["node"])["node"]
    assert {"input", "h", "c"} <= set(node["branch_reads"]), node["branch_reads"]
