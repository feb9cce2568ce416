"""Walking the graph page's levels of one model and judging every drawing met (graph_checks):
view_graph_test.py (synthetic models, the corpus) and view_real_test.py (real exporters' models)
use it.

    walk = walk_model(onnxmap, path)   # a Walk; walk.problems lists what the judge found
"""
import collections
import random

import onnx
import pytest

from graph_checks import LEVEL_KINDS, check_drawing
from graph_judge import GraphJudge, with_shown
from viewer import PATIENT, HttpError, Viewer

SAMPLED_OVER = 12  # a sampled walk takes blocks 0, 1, the middle and the last of longer runs


def subgraph_at(graph, path):
    """The GraphProto at `path` (api.md: NODE.ATTRIBUTE[.K] steps joined by /)."""
    for step in path.split("/") if path else []:
        node, attribute = step.split(".", 1)
        attrs = {a.name: a for a in graph.node[int(node)].attribute}
        name, _, k = attribute.rpartition(".") if attribute not in attrs else (attribute, "", "")
        graph = attrs[name].graphs[int(k)] if k else attrs[name].g
    return graph


class Walk:
    """Draws levels of one graph of a viewer and gathers the problems the judge finds."""

    def __init__(self, v, judge, graph_path="", sample=False):
        self.v, self.judge, self.graph_path, self.sample = v, judge, graph_path, sample
        self.problems, self.leaves, self.levels = [], [], []
        self.shown, self.default = {}, None  # level id -> its boxes; the default drawing

    def draw(self, **query):
        """One drawing, checked whole."""
        d = self.v.get("/api/graph", graph=self.graph_path, **query)
        self.problems += check_drawing(self.judge, d, self.graph_path)
        return d

    def level(self, box_id):
        """The level boxes of `box_id` drawn as a level, nothing unfolded."""
        d = self.draw(level=box_id, open="")
        assert d["level"] == box_id and d["open"] == [] and not d["clusters"], d["open"]
        self.shown[box_id] = [b for b in d["boxes"] if b["kind"] in LEVEL_KINDS]
        return self.shown[box_id]

    def blocks(self, box):
        """The ids of a repeat box's blocks walked, with what each block's level shows; checks
        that the blocks look alike, add up to the box, and that there are no more of them."""
        bid, count = box["id"], box["count"]
        shown = range(count) if not self.sample or count <= SAMPLED_OVER else \
            sorted({0, 1, count // 2, count - 1})
        ids = [with_shown(bid, s) for s in shown]
        signatures = set()
        for block in ids:
            boxes = self.level(block)
            signatures.add(tuple((b["kind"], b.get("op"), b.get("nodes", 1),
                                  tuple(sorted((o["op"], o["count"]) for o in b.get("ops", []))))
                                 for b in boxes))
            if sum(b.get("nodes", 1) for b in boxes) * count != box["nodes"]:
                self.problems.append(f"{block}: its boxes' nodes x {count} blocks are not the "
                                     f"{box['nodes']} of the repeat")
        if len(signatures) != 1:
            self.problems.append(f"{bid}: blocks {ids} show different boxes: {signatures}")
        with pytest.raises(HttpError) as past:
            self.v.get("/api/graph", graph=self.graph_path, level=with_shown(bid, count))
        assert past.value.status == 400, f"block {count} of {bid}: {past.value}"
        return ids

    def run(self, root="g:", max_levels=None):
        """Walks the tree of levels from `root` (at most max_levels levels, breadth first)."""
        todo = collections.deque([root])
        while todo and (max_levels is None or len(self.levels) < max_levels):
            level_id = todo.popleft()
            self.levels.append(level_id)
            size = len(self.judge.contents(level_id, as_level=True))
            for box in self.level(level_id):
                if box["kind"] == "node":
                    self.leaves.append(box["node"])
                    continue
                # (a run unfolds to one of its blocks, smaller: a level may be one run)
                if box["kind"] != "repeat" and len(self.judge.contents(box["id"])) >= size:
                    self.problems.append(f"level {level_id}: box {box['id']} holds all its "
                                         "nodes: unfolding it never ends")
                    continue
                todo.extend(self.blocks(box) if box["kind"] == "repeat" else [box["id"]])
        return self

    def check_partition(self):
        """After a whole walk: the leaves, with what is drawn inside them, hold every node
        once."""
        held = collections.Counter(i for leaf in self.leaves for i in self.judge.inside(leaf))
        twice = sorted(i for i, n in held.items() if n > 1)[:10]
        missed = sorted(set(range(len(self.judge.nodes))) - set(held))[:10]
        if twice or missed:
            self.problems.append(f"{self.graph_path or 'main'}: the walk reached nodes {twice} "
                                 f"twice, {missed} never")

    def check_opened(self, level_id):
        """`level_id` drawn with each box on it unfolded in place (a repeat at its last block)."""
        asked = []
        for b in self.level(level_id):
            if b["kind"] == "repeat":
                asked.append(with_shown(b["id"], b["count"] - 1))
            elif b["kind"] != "node":
                asked.append(b["id"])
        if asked:
            d = self.draw(level=level_id, open="\n".join(asked))
            assert set(d["open"]) | set(d["refused"]) == set(asked), (asked, d["open"])

    def check_default(self):
        """The default drawing: level g:, its first box unfolded where it is a range."""
        first = self.level("g:")[:1]
        self.default = d = self.draw()
        want = [first[0]["id"]] if first and first[0]["kind"] == "range" else []
        assert (d["level"], d["open"] + d["refused"]) == ("g:", want), (d["open"], want)

    def check_locate(self, nodes):
        """node=N for each of `nodes`: found is the box showing N (or the node N is drawn
        inside), every unfolded box holds it."""
        for n in nodes:
            try:
                d = self.draw(node=n)
            except HttpError as e:
                self.problems.append(f"{self.graph_path or 'main'} node={n}: {e}")
                continue
            host = self.judge.host[n]
            outside = [c for c in d["open"] if host not in self.judge.contents(c, as_level=True)]
            if d["found"] != f"n:{host}" or outside:
                self.problems.append(f"{self.graph_path or 'main'} node={n}: found "
                                     f"{d['found']} (not n:{host}), unfolded {outside} which "
                                     "do not hold it")


def walk_model(onnxmap, path, sample=False, locate=60):
    """Walks and checks the main graph of the model at `path` (with one viewer), whole or
    (sample) along a sample of the blocks of long runs; locates every node, or `locate` random
    ones of a larger graph. Returns the Walk, its problems not asserted yet."""
    proto = onnx.load(str(path), load_external_data=False)
    with Viewer(onnxmap.path, path, *PATIENT) as v:
        walk = Walk(v, GraphJudge(proto.graph), sample=sample)
        walk.check_default()
        walk.run(max_levels=40 if sample else None)
        if not sample:
            walk.check_partition()
        for level_id in walk.levels[:20]:
            walk.check_opened(level_id)
        n = len(proto.graph.node)
        walk.check_locate(range(n) if n <= locate else random.Random(n).sample(range(n), locate))
    return walk


def assert_sound(walk):
    assert not walk.problems, "\n".join(walk.problems[:30])
