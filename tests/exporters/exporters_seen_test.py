"""What a person sees of the LLM files today's exporters write (make_corpus.py's corpus).

The graph page: each model walked whole by the graph judge (tests/view/graph_walk.py, every level and box unfolded once,
each drawing judged), then what a person should see on a decoder's first level: at most 40
boxes, at most 20 of them single nodes, the decoder layers as one "× N" box (or one box a
layer), and no box whose op summary leads with shape plumbing (Shape, Gather, Unsqueeze ...)
where it holds computation.

torch's dynamo exporter names nodes flatly (node_MatMul_12) and keeps the module path in each
node's `namespace` metadata: the page folds by it (docs/view.md, "How the graph folds").
It also folds each Linear's transpose into its weight and renames it (val_105): `ls` and the
tensor page name the module that reads each weight, judged against the module path onnx reads
in the reader's metadata; GenAI's int4 weights say what they hold (N x K 4-bit integers, from
MatMulNBits' attributes); `info` names GenAI's genai_config.json beside the model.
Run in the PyPI environment (in_pypi_venv.py), whose onnx reads what these exporters write."""
import json
import pathlib
import subprocess
import sys

import onnx
import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "view"))
sys.path.insert(0, str(HERE))

import graph_folding  # noqa: E402
import make_corpus  # noqa: E402
from corpus_names import params  # noqa: E402
from graph_checks import LEVEL_KINDS  # noqa: E402
from graph_walk import assert_sound, walk_model  # noqa: E402
from viewer import Viewer  # noqa: E402

# The models whose first level should read as their layers (tiny_models.py: 2 layers each):
# decoders, and the encoders beside them.
LAYERED = [n for n in make_corpus.NAMES if "merged" not in n]
LAYERS = 2


@pytest.fixture(scope="session")
def corpus():
    folder = make_corpus.corpus_folder()
    make_corpus.make_all(folder)
    return folder


def made(corpus, name):
    """The model's path; skipped, saying why, where it is Optimum's and not made here."""
    if name in make_corpus.OPTIMUM and not (corpus / name).is_dir():
        pytest.skip(f"{name} is Optimum's, not made here: {make_corpus.WHY_NO_OPTIMUM}")
    return corpus / name / "model.onnx"


def first_level(onnxmap, path):
    with Viewer(onnxmap.path, path) as v:
        d = v.get("/api/graph", level="g:", open="")
    return [b for b in d["boxes"] if b["kind"] in LEVEL_KINDS], d


@pytest.mark.parametrize("name", params(make_corpus.NAMES, pytest.mark.slow))
def test_walked_whole(onnxmap, corpus, name):
    assert_sound(walk_model(onnxmap, made(corpus, name)))


def leads_with_plumbing(box):
    """Whether a box's summary names shape plumbing first while it holds other ops."""
    ranks = [graph_folding.summary_rank(o["op"]) for o in box.get("ops", [])]
    return bool(ranks) and ranks[0] == 2 and min(ranks) < 2


def layer_boxes(boxes):
    """The boxes that are the layers: one repeat of LAYERS numbered blocks (not Whisper's two
    convolutions), or LAYERS numbered groups."""
    def numbered(name):
        return name.rstrip("./").replace("/", ".").split(".")[-1].isdigit()
    runs = [b for b in boxes if b["kind"] == "repeat" and b["count"] == LAYERS and
            numbered(b["first"])]
    groups = [b for b in boxes if b["kind"] == "group" and numbered(b["title"])]
    return runs if len(runs) == 1 else groups if len(groups) == LAYERS else []


@pytest.mark.parametrize("name", params(LAYERED, pytest.mark.slow))
def test_first_level_reads_as_layers(onnxmap, corpus, name):
    """At most 40 boxes, 20 single nodes; the layers on it, or one click away where the
    layers differ (Optimum's Llama: layer 1 reads the rotary Unsqueeze of layer 0, so they
    are no repeat) inside the one group holding them; no summary led by shape plumbing."""
    path = made(corpus, name)
    boxes, _ = first_level(onnxmap, path)
    ids = [b["id"] for b in boxes]
    singles = [b for b in boxes if b["kind"] == "node"]
    assert len(boxes) <= 40 and len(singles) <= 20, (len(boxes), len(singles), ids)
    if not layer_boxes(boxes):
        holders = [b for b in boxes if b["kind"] == "group" and "layer" in b["title"]]
        assert len(holders) == 1, ids
        with Viewer(onnxmap.path, path) as v:
            inner = v.get("/api/graph", level=holders[0]["id"], open="")["boxes"]
        assert layer_boxes(inner), (ids, [b["id"] for b in inner])
    plumbing = [(b["id"], b["ops"]) for b in boxes if leads_with_plumbing(b)]
    assert not plumbing, plumbing


def test_dynamo_llama_folds_by_module(onnxmap, corpus):
    """Flat node names, module paths in the metadata: the first level is the embedding, each
    layer, the final norm and the head, in that order (the wrappers `model.` and `model.layers.`
    opened: they hold most of their level)."""
    boxes, _ = first_level(onnxmap, corpus / "torch-llama" / "model.onnx")
    shown = [(b["kind"], b.get("title") or b.get("op")) for b in boxes]
    assert shown == [("node", "Gather"), ("group", "model.layers.0."),
                     ("group", "model.layers.1."), ("group", "model.norm."),
                     ("node", "MatMul")], shown


def test_mixture_of_experts_folds_its_experts(onnxmap, corpus):
    """Mixtral's experts are one folded group inside each layer's sparse block."""
    path = made(corpus, "torch-mixtral")
    with Viewer(onnxmap.path, path) as v:
        layer = v.get("/api/graph", level="g:model.layers.0.", open="")
        titles = [b.get("title") for b in layer["boxes"] if b["kind"] == "group"]
        moe = next(t for t in titles if "moe" in t.lower() or "mlp" in t.lower())
        inner = v.get("/api/graph", level="g:model.layers.0." + moe, open="")
    groups = [b["title"] for b in inner["boxes"] if b["kind"] == "group"]
    assert any(t.startswith("experts") for t in groups), (titles, groups)


def ls_rows(onnxmap, path, *args):
    out = subprocess.run([onnxmap.path, "ls", str(path), "--json", *args], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)


def first_readers(path):
    """{initializer: (reader node, input index)} of the main graph, by onnx."""
    graph = onnx.load(str(path), load_external_data=False).graph
    names, readers = {t.name for t in graph.initializer}, {}
    for node in graph.node:
        for k, x in enumerate(node.input):
            if x in names and x not in readers:
                readers[x] = (node, k)
    return readers


def expected_module(node):
    """The module onnxmap should name for a reader: its namespace's path, else its name's."""
    for p in node.metadata_props:
        if p.key == "namespace":
            return graph_folding.namespace_scope(p.value).rstrip(".")
    parts = [x for x in node.name.split("/")[:-1] if x] if "/" in node.name else []
    return ".".join(parts)


@pytest.mark.parametrize("name", ["torch-llama", "torch-mixtral", "torch-gpt2", "genai-llama-int4"])
def test_ls_names_the_module_reading_each_weight(onnxmap, corpus, name):
    path = corpus / name / "model.onnx"
    readers = first_readers(path)
    rows = ls_rows(onnxmap, path)
    got = {r["name"]: r.get("module", "") for r in rows if r["path"].startswith("graph.init")}
    want = {n: expected_module(node) for n, (node, _) in readers.items()}
    assert {n: got.get(n, "") for n in want} == want
    renamed = [r for r in rows if r.get("module") and not r["name"].startswith(r["module"])]
    if name.startswith("torch-"):
        assert renamed, "the dynamo exporter renames folded weights; ls should name their module"
    by_module = [r.get("module") for r in ls_rows(onnxmap, path, "--sort", "module")]
    layers = [m.split(".")[2] for m in by_module if m and m.startswith(("model.layers.",
                                                                         "transformer.h."))]
    assert layers == sorted(layers, key=int), "--sort module goes layer by layer"


def test_genai_int4_weights_say_what_they_hold(onnxmap, corpus):
    path = corpus / "genai-llama-int4" / "model.onnx"
    readers = first_readers(path)
    rows = [r for r in ls_rows(onnxmap, path) if "logical" in r]
    assert rows, "MatMulNBits reads packed int4 weights"
    for r in rows:
        node, k = readers[r["name"]]
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        assert node.op_type == "MatMulNBits" and k == 1, r
        want = {"dtype": f"UINT{attrs.get('bits', 4)}", "dims": [attrs["N"], attrs["K"]],
                "block_size": attrs["block_size"], "op": "com.microsoft.MatMulNBits"}
        assert r["logical"] == want, (r, want)
    with Viewer(onnxmap.path, path) as v:
        page = v.get("/api/tensor", name=rows[0]["name"])
    assert page["logical"] == rows[0]["logical"] and page["module"] == rows[0]["module"], page


def test_info_names_genai_config(onnxmap, corpus):
    path = corpus / "genai-llama-int4" / "model.onnx"
    config = json.loads((path.parent / "genai_config.json").read_text())["model"]
    info = json.loads(subprocess.run([onnxmap.path, "info", str(path), "--json"],
                                     capture_output=True, text=True, check=True).stdout)
    assert info["genai_config"] == {"file": "genai_config.json", "type": config["type"],
                                    "context_length": config["context_length"],
                                    "decoder": config["decoder"]["filename"],
                                    "layers": config["decoder"]["num_hidden_layers"]}
    text = subprocess.run([onnxmap.path, "info", str(path)], capture_output=True, text=True,
                          check=True).stdout
    line = next(x for x in text.splitlines() if x.startswith("genai_config:"))
    assert "genai_config.json beside it" in line and config["type"] in line, line


def test_merged_decoder_draws_its_inputs_into_the_if(onnxmap, corpus):
    """Optimum's merged Whisper decoder is one If (with the cache or without) whose branches
    read the graph's inputs: each is drawn, wired to the If."""
    path = made(corpus, "optimum-whisper-decoder-merged")
    boxes, d = first_level(onnxmap, path)
    graph = onnx.load(str(path), load_external_data=False).graph
    inits = {t.name for t in graph.initializer}
    want = {i.name for i in graph.input if i.name not in inits}
    drawn = {b["id"][2:] for b in d["boxes"] if b["kind"] == "input"}
    assert drawn == want, (drawn, want)
    assert [b.get("op") for b in boxes] == ["If"], [b["id"] for b in boxes]
    wired = {d["boxes"][e["from"]]["id"][2:] for e in d["edges"]}
    assert want <= wired, want - wired
