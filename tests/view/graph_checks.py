"""A drawing of /api/graph (tools/onnxmap/viewer/api.md) against the model: every problem of
one answer, judged by graph_judge.GraphJudge (what each box stands for) and graph_geometry (the
layout).

    problems = check_drawing(judge, answer, graph_path)   # [] when the drawing is right

Checked: each level (the drawing's own and each unfolded cluster's) has at most 150 boxes, and
its boxes and clusters hold the drawn nodes of what it unfolds, each once; what each box says
(node, op, name, weights and their types, constants, subgraph links; a group's node count and
most common ops; a repeat's count, first and last block); the graph inputs and outputs drawn;
every edge real (its values made in its `from` box and read in its `to` box) and every value
crossing between boxes an edge, `count` being the (value, reading input) pairs; `open` and
`found`; the geometry. And that the folding keeps the dataflow: the drawing is a DAG whose
edges all point down, every folded box is convex (no path of the graph leaves it and comes
back), and no group is named after an op type (`Conv.`: a counter, not a scope).
"""
import collections

import graph_folding
import graph_geometry

MAX_LEVEL_BOXES = 150      # boxes of one level (kinds node, group, repeat, range)
MAX_SCENE_BOXES = 600      # level boxes in one drawing, unfolded clusters' boxes included
MAX_GRAPH_IO = 32          # graph inputs (and outputs) drawn as boxes
MAX_EDGES = 4000
LEVEL_KINDS = ("node", "group", "repeat", "range")


def same_typed(got, want):
    """Lists of {name, type, ...} dicts alike, a type of None (unknown to python3-onnx) matching
    any."""
    return len(got) == len(want) and all(
        all(g.get(k) == w[k] for k in w if w[k] is not None) for g, w in zip(got, want))


def check_box(judge, box, graph_path):
    """Problems with what one level box says."""
    bid, kind = box["id"], box["kind"]
    if kind == "node":
        i = int(bid[2:])
        want = judge.node_box(i, graph_path)
        bad = [k for k in ("quantized", "more_weights", "more_constants", "subgraphs")
               if box[k] != want[k]]
        bad += [k for k in ("weights", "constants") if not same_typed(box[k], want[k])]
        if box["node"] != i or box["op"] != judge.op(i) or box["name"] != judge.nodes[i].name:
            bad.append("node/op/name")
        return [f"{bid}: {k} is {box[k]}, the graph says {want.get(k)}" for k in bad]
    nodes = judge.contents(bid)
    problems = [] if box["nodes"] == len(nodes) else [
        f"{bid}: says {box['nodes']} nodes, holds {len(nodes)}"]
    if not judge.convex(nodes):
        problems.append(f"{bid}: not convex, a path leaves it and comes back: folded, it "
                        "draws a cycle")
    if kind == "group":
        last = box["prefix"].rstrip("./").replace("/", ".").split(".")[-1]
        if last in {judge.nodes[i].op_type for i in nodes}:
            problems.append(f"{bid}: a group named after the op type {last}, a counter's "
                            "prefix, not a scope")
    ops = collections.Counter(judge.op(i) for i in nodes)
    listed = [(o["op"], o["count"]) for o in box["ops"]]
    rank = graph_folding.summary_rank
    want = sorted(ops.items(), key=lambda e: (rank(e[0]), -e[1]))[:3]
    if [(rank(o), c) for o, c in listed] != [(rank(o), c) for o, c in want] or any(
            ops[o] != c for o, c in listed):
        problems.append(f"{bid}: ops {listed} are not its first 3 of {dict(ops)}, the "
                        "computation first, most common first")
    if kind == "repeat":
        _, units, (b, e), (sb, se) = judge.parse(bid)
        period, count = se - sb, box["count"]
        names = (units[b].name, units[e - period].name)
        if count < 2 or count != (e - b) // period or (box["first"], box["last"]) != names:
            problems.append(f"{bid}: count {count}, first/last {box['first']}/{box['last']}, "
                            f"its id says {(e - b) // period} blocks, first/last {names}")
    if kind == "range":
        _, units, (b, e), _ = judge.parse(bid)
        if (box["first"], box["last"]) != (units[b].name, units[e - 1].name):
            problems.append(f"{bid}: first/last are not its units' {units[b].name}, "
                            f"{units[e - 1].name}")
    return problems


def places(judge, d):
    """Where each drawn node is drawn: {node: box index}, and {node: [(run, block, shown)]}
    for the nodes of unfolded runs, the outermost run first. A run unfolded shows one block;
    each node of its other blocks is drawn as its like in the block shown (the k-th in graph
    order as the k-th; that like drawn as its own like where a run is unfolded inside the
    block), so that what the run reads and makes stays connected to that block
    (docs/view.md)."""
    box_of, block_of = {}, collections.defaultdict(list)
    for b, box in enumerate(d["boxes"]):
        if box["kind"] in LEVEL_KINDS:
            box_of.update((i, b) for i in judge.contents(box["id"]))
    runs = []
    for run in [c["id"] for c in d["clusters"] if c["id"].startswith("r:")]:
        blocks, shown = judge.run_blocks(run)
        for k, ids in enumerate(blocks):
            for i in ids:
                block_of[i].append((len(runs), k, k == shown))
        runs.append((blocks, shown))
    for blocks, shown in reversed(runs):  # the inner runs first
        for k, ids in enumerate(blocks):
            for i, like in zip(ids, blocks[shown]) if len(ids) == len(blocks[shown]) else ():
                if k != shown and like in box_of:
                    box_of[i] = box_of[like]
    return box_of, block_of


def hidden_value(a, b):
    """Whether a value from a node in runs `a` to one in runs `b` (places()) is not drawn:
    within the innermost run holding both, they are in different blocks or not in the one
    shown."""
    for run, block, _ in reversed(a):
        for other, other_block, shown in reversed(b):
            if run == other:
                return block != other_block or not shown
    return False


def expected_edges(judge, d):
    """{(from, to): [values, one per (value, reading input)]}, and the io boxes expected."""
    boxes = d["boxes"]
    box_of, block_of = places(judge, d)
    index = {box["id"]: b for b, box in enumerate(boxes)}
    edges = collections.defaultdict(list)
    # Read by a box, or by no node at all (an unread input is shown too).
    inputs = [x for x in judge.inputs
              if any(judge.host[r] in box_of for r in judge.readers.get(x, ()))
              or not judge.readers.get(x)][:MAX_GRAPH_IO]
    for x in inputs:
        for r in judge.readers[x]:
            if judge.host[r] in box_of and f"i:{x}" in index:
                edges[index[f"i:{x}"], box_of[judge.host[r]]].append(x)
    outputs = [y for y in judge.outputs
               if y in judge.producer and judge.host[judge.producer[y]] in box_of][:MAX_GRAPH_IO]
    for y in outputs:
        if f"o:{y}" in index:
            edges[box_of[judge.host[judge.producer[y]]], index[f"o:{y}"]].append(y)
    for i, to in box_of.items():
        for source, x in judge.sources_of[i]:
            frm = box_of.get(source)
            if frm is None or frm == to:
                continue
            # Within a run, only the shown block's own values are drawn.
            if not hidden_value(block_of.get(source, ()), block_of.get(i, ())):
                edges[frm, to].append(x)
    return edges, inputs, outputs


def check_edges(judge, d):
    """Every edge real, every crossing value an edge, counts right, io boxes the right ones."""
    boxes = d["boxes"]
    want, inputs, outputs = expected_edges(judge, d)
    problems = []
    io = ([b["id"] for b in boxes if b["kind"] == "input"],
          [b["id"] for b in boxes if b["kind"] == "output"])
    if io != ([f"i:{x}" for x in inputs], [f"o:{y}" for y in outputs]):
        problems.append(f"input/output boxes {io}, the graph wants {inputs}, {outputs}")
    for b in boxes:
        if b["kind"] in ("input", "output") and judge.value_type(b["name"]) not in (
                None, b["type"]):
            problems.append(f"{b['id']}: type {b['type']!r}")
    got = {(e["from"], e["to"]): e for e in d["edges"]}
    if len(got) != len(d["edges"]):
        problems.append("two edges join the same pair of boxes")
    if any(not (0 <= x < len(boxes)) for pair in got for x in pair):
        return problems + ["an edge joins a box that is not there"]
    if len(want) > MAX_EDGES:
        return problems + ([] if len(got) == MAX_EDGES and set(got) <= set(want) else
                           [f"{len(want)} pairs joined: {MAX_EDGES} edges, all real, expected"])
    for pair in sorted(set(want) - set(got))[:5]:
        problems.append(f"missing edge {boxes[pair[0]]['id']} -> {boxes[pair[1]]['id']} "
                        f"carrying {want[pair][:4]}")
    for pair, e in got.items():
        frm, to = boxes[pair[0]]["id"], boxes[pair[1]]["id"]
        names = [v["name"] for v in e["values"]]
        if pair not in want:
            problems.append(f"edge {frm} -> {to} carrying {names}: no value goes from one to "
                            "the other")
            continue
        real = collections.Counter(want[pair])
        if collections.Counter(names) - real or len(names) != min(4, len(want[pair])):
            problems.append(f"edge {frm} -> {to}: values {names}, but {sorted(real)} go from "
                            "one to the other")
        if e["count"] != len(want[pair]):
            problems.append(f"edge {frm} -> {to}: count {e['count']}, {len(want[pair])} "
                            "(value, reading input) pairs")
        if not same_typed(e["values"], [{"name": n, "type": judge.value_type(n)} for n in names]):
            problems.append(f"edge {frm} -> {to}: value types {e['values']}")
    return problems[:20]


def check_levels(judge, d):
    """Each level of the drawing (the top one and each cluster's) within 150 boxes, and its
    boxes and unfolded clusters partitioning the drawn nodes of what it unfolds."""
    problems = []
    clusters = d["clusters"]
    levels = [(-1, d["level"])] + [(c, cl["id"]) for c, cl in enumerate(clusters)]
    for c, level_id in levels:
        members = [b for b in d["boxes"] if b["cluster"] == c and b["kind"] in LEVEL_KINDS]
        if len(members) > MAX_LEVEL_BOXES:
            problems.append(f"level {level_id}: {len(members)} boxes")
        parts = [judge.contents(b["id"]) for b in members]
        parts += [judge.contents(cl["id"]) for cl in clusters  # a run: all its blocks
                  if cl["parent"] == c]
        held = collections.Counter(i for part in parts for i in part)
        want = collections.Counter(judge.contents(level_id, as_level=True))
        if held != want:
            extra, lost = sorted(held - want)[:5], sorted(want - held)[:5]
            problems.append(f"level {level_id}: its boxes hold nodes {extra} more and {lost} "
                            "fewer than it does (or some twice)")
    for c, cl in enumerate(clusters):
        if cl["nodes"] != len(judge.contents(cl["id"])):
            problems.append(f"cluster {cl['id']}: says {cl['nodes']} nodes")
        if "blocks" in cl and cl["count"] <= MAX_LEVEL_BOXES:
            names = judge.unit_names(cl["id"])
            _, _, (b, e), (sb, se) = judge.parse(cl["id"])
            if cl["blocks"] != names[b:e:se - sb]:
                problems.append(f"cluster {cl['id']}: blocks {cl['blocks'][:3]}...")
    level_boxes = [b for b in d["boxes"] if b["kind"] in LEVEL_KINDS]
    if len(level_boxes) > MAX_SCENE_BOXES:
        problems.append(f"{len(level_boxes)} boxes in one drawing")
    return problems


def check_flow(d):
    """The drawing is a DAG and every edge points down (its `to` box below its `from` box)."""
    boxes, problems = d["boxes"], []
    nxt = collections.defaultdict(list)
    for e in d["edges"]:
        if not (0 <= e["from"] < len(boxes) and 0 <= e["to"] < len(boxes)):
            continue  # check_edges says so
        nxt[e["from"]].append(e["to"])
        a, b = boxes[e["from"]], boxes[e["to"]]
        if not a["y"] + a["height"] / 2 < b["y"] + b["height"] / 2:
            problems.append(f"edge {a['id']} -> {b['id']} points up")
    state = {}  # 1: on the walk's stack, 2: done
    for root in range(len(boxes)):
        stack = [(root, iter(nxt[root]))] if root not in state else []
        state.setdefault(root, 1)
        while stack:
            at, it = stack[-1]
            step = next(it, None)
            if step is None:
                state[at] = 2
                stack.pop()
            elif state.get(step) == 1:
                problems.append(f"a cycle through {boxes[step]['id']}")
                return problems[:10]
            elif step not in state:
                state[step] = 1
                stack.append((step, iter(nxt[step])))
    return problems[:10]


def check_drawing(judge, d, graph_path=""):
    """All problems of one answer of /api/graph: levels, boxes, edges, geometry, open/found."""
    problems = check_levels(judge, d)
    for box in d["boxes"]:
        if box["kind"] in LEVEL_KINDS:
            problems += check_box(judge, box, graph_path)
    problems += check_edges(judge, d)
    problems += check_flow(d)
    problems += graph_geometry.problems(d)
    if d["open"] != [c["id"] for c in d["clusters"]]:
        problems.append(f"open {d['open']} is not the clusters' ids")
    if d["found"] and d["found"] not in [b["id"] for b in d["boxes"]]:
        problems.append(f"found {d['found']} is no box of the drawing")
    return [f"{graph_path or 'main'} level={d['level']} open={d['open']}: {p}"
            for p in problems]
