"""The graph page's folding rules (docs/view.md, "How the graph folds"; tools/onnxmap/viewer/
fold_rules.cpp) stated again in Python for the judge (graph_judge.py), from the spec's words:

  - the *scope* of a name is the name up to its last segment (segments cut after `.` and `/`),
    less the segments just before it that are the node's op type (case and all):
    p2o.Conv.12 -> p2o.;
  - a scope *tells* where a node is when it has two segments or more, or one after a leading
    `/`; a node's scope is its name's; for an unnamed node, the first telling one of: its
    outputs' (torch writes the module path there), its readers' common scope (in reverse graph
    order) where it reads another node's output (not a parameter's); quantization plumbing
    whose name has no scope takes its readers' too;
  - a *parameter* reads no graph input and no output of a node other than a parameter (so
    only initializers, constants, parameters' outputs; not a graph output, no subgraph): drawn inside its first reader (and shown inside
    its other readers, GraphJudge.guests), and it makes no edge; an Identity whose one
    output feeds one node, inside it; then quantization plumbing of an activation, inside the
    node that makes the activation;
  - where a node's name has no telling scope, the module path in its `namespace` metadata
    (torch's dynamo exporter: "model: LlamaModel/model.layers.0: LlamaDecoderLayer/pow_1:
    aten.pow", each part "module: class", the last the traced op's) is its scope, `.`-ended;
    in a graph where some node has one, a node without one counts as unnamed below;
  - a box's op summary: its 3 first ops, those carrying weights and attention first (names
    holding MatMul, Gemm, Conv, Attention, Normalization, Softmax, Pool, Einsum; LSTM, GRU,
    RNN), shape plumbing last (PLUMBING_OPS of the default domain), most common first within;
  - a node's *path* is its scope and its label (the rest of its name, or its key) as one
    segment; paths are unique (a "'" added while taken).
"""
import heapq

QUANTIZE_OPS = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear")
COMPUTING_PARTS = ("MatMul", "Gemm", "Conv", "Attention", "Normalization", "Softmax", "Pool",
                   "Einsum")
PLUMBING_OPS = {"Cast", "CastLike", "Concat", "Constant", "ConstantOfShape", "Expand", "Flatten",
                "Gather", "GatherND", "Identity", "NonZero", "Range", "Reshape", "Shape", "Size",
                "Slice", "Split", "Squeeze", "Transpose", "Unsqueeze"}
LEAF_MARK = "\x1f"  # a label's `.` and `/` in a path


def is_cut(c):
    return c in "./"


def segment_start(name, end):
    """Where the segment that ends at `end` starts (its own cut, at end - 1, is part of it)."""
    at = end - 1 if end > 0 and is_cut(name[end - 1]) else end
    return max(name.rfind(".", 0, at), name.rfind("/", 0, at)) + 1


def scope_length(name, op):
    scope = segment_start(name, len(name))
    while scope > 0:
        before = segment_start(name, scope)
        segment = name[before:scope]
        segment = segment[:-1] if segment and is_cut(segment[-1]) else segment
        if not op or segment != op:
            break
        scope = before
    return scope


def telling(scope):
    parts = scope.replace("/", ".").split(".")[:-1]
    segments = sum(1 for p in parts if p)
    return segments >= 2 or (segments == 1 and scope.startswith("/"))


def namespace_scope(text):
    """The module path of torch's `namespace` metadata as a scope, "" where there is none."""
    parts = text.split("/")[:-1]
    if not parts or any(": " not in p for p in parts):
        return ""
    module = ""
    for part in parts:
        name = part.split(": ", 1)[0]
        if name:
            module = name if not module or name.startswith(module + ".") else module + "." + name
    return module + "." if module else ""


def node_module_scope(node):
    for p in getattr(node, "metadata_props", ()):  # onnx 1.16 and later
        if p.key == "namespace":
            return namespace_scope(p.value)
    return ""


def summary_rank(qualified):
    """Where an op (the API's name: domain.Op outside ai.onnx) comes in a box's summary."""
    domain, _, op = qualified.rpartition(".")
    if any(part in op for part in COMPUTING_PARTS) or op in ("LSTM", "GRU", "RNN"):
        return 0
    return 2 if domain in ("", "ai.onnx") and op in PLUMBING_OPS else 1


def common_scope(a, b):
    end = 0
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            break
        if is_cut(x):
            end = i + 1
    return a[:end]


def quantize_op(node):
    return node.domain in ("", "ai.onnx", "com.microsoft") and node.op_type in QUANTIZE_OPS


def quantized_op(node):
    op = node.op_type
    return quantize_op(node) or op.startswith(("QLinear", "QGemm", "QAttention")) or \
        op.endswith("Integer")


def hosts(nodes, producer, readers, inputs, outputs):
    """(host of each node, parameter flag of each node); `inputs`: the graph inputs that are
    not initializers."""
    n = len(nodes)
    param, into = [False] * n, [None] * n
    outputs, inputs = set(outputs), set(inputs)

    def made_by_parameter(v):
        return param[producer[v]] if v in producer else v not in inputs

    def any_output(node):
        return any(o in outputs for o in node.output)

    for i, node in enumerate(nodes):
        param[i] = all(not v or made_by_parameter(v) for v in node.input) and \
            not any_output(node) and \
            not any(a.HasField("g") or len(a.graphs) for a in node.attribute)
        identity = not param[i] and node.op_type == "Identity" and \
            node.domain in ("", "ai.onnx") and len(node.output) == 1 and not any_output(node)
        if not param[i] and not identity:
            continue
        reads = [r for o in node.output if o for r in readers.get(o, ())]
        if param[i]:
            into[i] = min(reads, default=None)
        elif len(set(reads)) == 1:
            into[i] = reads[0]

    def resolve():
        host = []
        for i in range(n):
            at, steps = i, 0
            while into[at] is not None and steps < n and into[at] != i:
                at, steps = into[at], steps + 1
            host.append(at)
        return host

    host = resolve()
    for i, node in enumerate(nodes):
        if host[i] != i or not quantize_op(node) or any_output(node):
            continue
        p = producer.get(node.input[0]) if node.input and node.input[0] else None
        if p is None or host[p] == i:
            continue
        if all(not v or made_by_parameter(v) for v in node.input[1:]):
            into[i] = p
    return resolve(), param


def paths(nodes, keys, host, readers, producer, param):
    """(fold path of each node, label of each node)."""
    n = len(nodes)
    scope, from_name = [""] * n, [True] * n
    for i, node in enumerate(nodes):
        scope[i] = node.name[:scope_length(node.name, node.op_type)]
        if telling(scope[i]):
            continue
        module = node_module_scope(node)
        if module:
            scope[i], from_name[i] = module, False
            continue
        if node.name:
            continue
        for out in node.output:
            s = out[:scope_length(out, node.op_type)]
            if telling(s):
                scope[i], from_name[i] = s, False
                break
    modules = any(node_module_scope(node) for node in nodes if not telling(
        node.name[:scope_length(node.name, node.op_type)]))
    for i in reversed(range(n)):
        inner = (not nodes[i].name or modules) and any(
            x in producer and not param[producer[x]] for x in nodes[i].input)
        if not from_name[i] or scope[i] or not (inner or quantize_op(nodes[i])):
            continue
        common = None
        for out in nodes[i].output:
            for r in readers.get(out, ()) if out else ():
                if host[r] != host[i]:
                    s = scope[host[r]]
                    common = s if common is None else common_scope(common, s)
        if common is not None and telling(common):
            scope[i], from_name[i] = common, False
    taken, out, labels = set(), [], []
    for i in range(n):
        named = from_name[i] and keys[i] == nodes[i].name
        label = keys[i][len(scope[i]):] if named else keys[i]
        path = scope[i] + label.replace(".", LEAF_MARK).replace("/", LEAF_MARK)
        while path in taken:
            path += "'"
        taken.add(path)
        out.append(path)
        labels.append(label)
    return out, labels


def topological_positions(n, drawn, successors):
    """Kahn's order of the drawn nodes, the smallest id first among those ready."""
    waiting = [0] * n
    for i in drawn:
        for s in successors[i]:
            waiting[s] += 1
    ready = [i for i in drawn if waiting[i] == 0]
    heapq.heapify(ready)
    position, placed = {}, 0
    while ready:
        i = heapq.heappop(ready)
        position[i], placed = placed, placed + 1
        for s in successors[i]:
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(ready, s)
    for i in drawn:
        if i not in position:
            position[i], placed = placed, placed + 1
    return position


def convex(members, successors, position):
    """Whether no path of the drawn graph leaves `members` (a set) and comes back."""
    if len(members) < 2:
        return True
    last = max(position[i] for i in members)
    todo = [s for i in members for s in successors[i]
            if s not in members and position[s] < last]
    seen = set(todo)
    while todo:
        at = todo.pop()
        for s in successors[at]:
            if s in members:
                return False
            if s not in seen and position[s] < last:
                seen.add(s)
                todo.append(s)
    return True


def kahn(m, edges, first, forward=True):
    """The units placed by Kahn's algorithm over `edges` (the smallest first node first)."""
    nxt, waiting = [[] for _ in range(m)], [0] * m
    for a, b in edges:
        a, b = (a, b) if forward else (b, a)
        nxt[a].append(b)
        waiting[b] += 1
    ready = [(first[u], u) for u in range(m) if waiting[u] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, u = heapq.heappop(ready)
        order.append(u)
        for v in nxt[u]:
            waiting[v] -= 1
            if waiting[v] == 0:
                heapq.heappush(ready, (first[v], v))
    return order
