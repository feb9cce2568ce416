"""The judge of /api/graph (tools/onnxmap/viewer/api.md, "GET /api/graph"), the model's side:
what the boxes of a drawing stand for, worked out from the ONNX graph itself with python3-onnx,
following the spec's rules, not the server's code (graph_checks.py compares a drawing with it).

    judge = GraphJudge(graph_proto)      # the main graph, or a subgraph
    judge.contents("g:model.layers.")    # the drawn nodes that box stands for

Terms (the spec's):
  - a node's *key* is its name, or OpType#INDEX when unnamed or its name is taken already;
  - its *host* is itself, or the node it is drawn inside, and its *path* what it folds by
    (graph_folding.py states those rules). *Drawn* nodes are their own hosts; the *guests* of a
    drawn node are the other nodes it hosts; the nodes a box *shows* inside it are its guests
    and the parameters it or they read (and those these read) that another node hosts: a
    weight preparation several nodes read is shown in each, held by its host only, in node
    order; parameters make no edges;
  - the *units* of a prefix are its children: drawn nodes grouped by their path's next segment
    (cut after `.` or `/`); a prefix whose only child is a group is passed through to that
    group's prefix; a group that is not convex, or that closes a cycle between units (it both
    reaches and is reached from one), is replaced by its children, until none is; the units
    then come in Kahn's topological order (the smallest first node first). A unit is named by
    its path past the prefix, a one-node leaf by its label;
  - the *contents* of a box id are the drawn nodes it stands for: n:N itself, g:P every unit of
    P, k:B:E:P units [B, E) of P, r:B:PER:C:S:P units [B, B + PER*C) as a folded box and the
    block [B + S*PER, B + (S+1)*PER) as a level (unfolded, it shows block S only).
"""
import bisect
import collections

import onnx

import graph_folding


def dtype_name(code):
    try:
        return onnx.TensorProto.DataType.Name(code)
    except ValueError:  # a type newer than this python3-onnx: not judged
        return None


def type_text(t):
    """A TypeProto as onnxmap writes it: FLOAT[batch, 2], seq(INT64[3]), "?" for none."""
    which = t.WhichOneof("value")
    if which in ("tensor_type", "sparse_tensor_type"):
        inner = getattr(t, which)
        name = dtype_name(inner.elem_type)
        if name is None:
            return None
        text = ("sparse " if which == "sparse_tensor_type" else "") + name
        if not inner.HasField("shape"):
            return text
        dims = [str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
                for d in inner.shape.dim]
        return text + "[" + ", ".join(dims) + "]"
    if which in ("sequence_type", "optional_type"):
        inner = type_text(getattr(t, which).elem_type)
        return None if inner is None else f"{which[:-5].replace('sequence', 'seq')}({inner})"
    if which == "map_type":
        key, inner = dtype_name(t.map_type.key_type), type_text(t.map_type.value_type)
        return None if None in (key, inner) else f"map({key}, {inner})"
    return None if which else "?"


def segment(key, start):
    """The next segment of `key` after `start` characters: up to and with a `.` or `/`."""
    rest = key[start:]
    cuts = [i for i in (rest.find("."), rest.find("/")) if i >= 0]
    return rest[:min(cuts) + 1] if cuts else rest


def with_shown(repeat_id, shown):
    """The id of block `shown` of the run `repeat_id` (r:BEGIN:PERIOD:COUNT:SHOWN:PREFIX)."""
    fields = repeat_id.split(":", 5)
    fields[4] = str(shown)
    return ":".join(fields)


Unit = collections.namedtuple("Unit", "prefix name nodes")  # nodes: drawn ids, ascending


def free_values(graph):
    """The values `graph` and the graphs of its nodes read and do not make, in reading order."""
    made = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    read = []
    for node in graph.node:
        read += list(node.input) + node_free_values(node)
        made |= set(node.output)
    return [x for x in read if x and x not in made]


def node_free_values(node):
    """What the graphs of `node`'s attributes read from outside them."""
    out = []
    for a in node.attribute:
        for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
            out += free_values(g)
    return out


class GraphJudge:
    """One graph's nodes, values and folding, as the spec defines them."""

    def __init__(self, graph, nested=False):
        """`nested`: a subgraph, whose values read from the graphs around it are its inputs."""
        self.graph = graph
        self.nodes = list(graph.node)
        n = len(self.nodes)
        self.initializers = {t.name: t for t in graph.initializer}
        self.outputs = [o.name for o in graph.output]
        self.inputs = [i.name for i in graph.input if i.name not in self.initializers]
        self.declared = {}
        for v in list(graph.input) + list(graph.output) + list(graph.value_info):
            self.declared.setdefault(v.name, v.type)
        self.producer, self.readers = {}, collections.defaultdict(list)
        for i, node in enumerate(self.nodes):
            for x in node.input:
                if x:
                    self.readers[x].append(i)
            for y in node.output:
                if y:
                    self.producer.setdefault(y, i)
        self.node_inputs = [list(node.input) for node in self.nodes]
        self._subgraph_reads(nested)
        taken, self.keys = set(), []
        for i, node in enumerate(self.nodes):
            fresh = node.name and node.name not in taken
            taken.add(node.name)
            self.keys.append(node.name if fresh else f"{node.op_type}#{i}")
        self.host, self.parameter = graph_folding.hosts(
            self.nodes, self.producer, self.readers, self.inputs, self.outputs)
        self.guests = collections.defaultdict(list)
        for i in range(n):
            if self.host[i] != i:
                self.guests[self.host[i]].append(i)
        self.drawn = [i for i in range(n) if self.host[i] == i]
        self.paths, self.labels = graph_folding.paths(self.nodes, self.keys, self.host,
                                                      self.readers, self.producer, self.parameter)
        self.sorted_keys = sorted((self.paths[i], i) for i in self.drawn)
        # Each drawn node's sources, found once: every drawing's check reads them.
        self.sources_of = {i: self.sources(i) for i in self.drawn}
        self.successors = collections.defaultdict(set)
        for i in self.drawn:
            for source, _ in self.sources_of[i]:
                if source != i:
                    self.successors[source].add(i)
        self._position = None
        self._units = {}
        self._run_blocks = {}

    def shown(self, i):
        """The nodes drawn node i's box shows inside it: its guests, and the parameters read
        from inside it, recursively, sorted."""
        inside, todo = set(self.guests.get(i, [])), [i] + self.guests.get(i, [])
        while todo:
            for x in self.node_inputs[todo.pop()]:
                p = self.producer.get(x)
                if p is not None and self.parameter[p] and p != i and p not in inside:
                    inside.add(p)
                    todo.append(p)
        return sorted(inside)

    def _subgraph_reads(self, nested):
        """What the subgraphs of each node read: this graph's values (weights aside) are read
        by that node; in a subgraph (`nested`), the values read from outside it are its inputs
        after its declared ones, read by the nodes that read them or whose own graphs do."""
        inside = set(self.producer) | set(self.initializers) | {i.name for i in self.graph.input}
        self.outer = []
        for i, node in enumerate(self.nodes):
            for x in node.input:
                if nested and x and x not in inside and x not in self.outer:
                    self.outer.append(x)
            for x in dict.fromkeys(node_free_values(node)):
                if x not in inside:
                    if not nested:
                        continue
                    if x not in self.outer:
                        self.outer.append(x)
                elif x in self.initializers and x not in self.producer:
                    continue
                self.readers[x].append(i)
                self.node_inputs[i].append(x)
        self.inputs += self.outer
        self.outer = set(self.outer)

    def sources(self, i):
        """(drawn node, value) for each input of drawn node i and its guests that a node other
        than a parameter makes."""
        return [(self.host[self.producer[x]], x) for j in self.inside(i)
                for x in self.node_inputs[j]
                if x in self.producer and not self.parameter[self.producer[x]]]

    @property
    def position(self):
        """Each drawn node's place in a topological order (for convexity)."""
        if self._position is None:
            self._position = graph_folding.topological_positions(
                len(self.nodes), self.drawn, self.successors)
        return self._position

    def convex(self, nodes):
        """Whether no path of the drawn graph leaves the drawn nodes `nodes` and comes
        back."""
        return graph_folding.convex(set(nodes), self.successors, self.position)

    def op(self, i):
        """The op as the API names it: domain.Op outside ai.onnx."""
        node = self.nodes[i]
        return (node.domain + "." if node.domain not in ("", "ai.onnx") else "") + node.op_type

    def value_type(self, name):
        """A value's type text: declared, else an initializer's; "" when neither; None where
        this python3-onnx cannot name it (not judged)."""
        if name in self.declared:
            return type_text(self.declared[name])
        t = self.initializers.get(name)
        if t is None:
            return ""
        dtype = dtype_name(t.data_type)
        return None if dtype is None else dtype + "[" + ", ".join(map(str, t.dims)) + "]"

    def children(self, prefix):
        """(the prefix passed through, its children by next segment: {segment: drawn ids})."""
        while True:
            groups, keys = {}, self.sorted_keys
            for k in range(bisect.bisect_left(keys, (prefix, -1)), len(keys)):
                if not keys[k][0].startswith(prefix):
                    break
                groups.setdefault(segment(keys[k][0], len(prefix)), []).append(keys[k][1])
            if len(groups) == 1:
                [(seg, ids)] = groups.items()
                if len(ids) > 1 and seg:
                    prefix += seg
                    continue
            return prefix, groups

    def _unit(self, level, prefix, ids):
        ids = sorted(ids)
        leaf = len(ids) == 1 and not prefix.endswith((".", "/"))
        return Unit(prefix, self.labels[ids[0]] if leaf else prefix[len(level):], ids)

    def _open(self, level, unit):
        inner, groups = self.children(unit.prefix)
        return [self._unit(level, inner + seg, ids) for seg, ids in groups.items()]

    def _order(self, units):
        """(units in Kahn's order, which of them are on a cycle (or between cycles))."""
        unit_of = {i: u for u, unit in enumerate(units) for i in unit.nodes}
        edges = {(unit_of[i], unit_of[s]) for unit in units for i in unit.nodes
                 for s in self.successors[i] if s in unit_of and unit_of[s] != unit_of[i]}
        first = [unit.nodes[0] for unit in units]
        order = graph_folding.kahn(len(units), edges, first)
        placed = set(order)
        backward = set(graph_folding.kahn(len(units), edges, first, forward=False))
        cycle = {u for u in range(len(units)) if u not in placed and u not in backward}
        order += [u for u in range(len(units)) if u not in placed]
        return [units[u] for u in order], [u in cycle for u in order]

    def _settle(self, prefix, units):
        """Groups not convex, or closing a cycle between units, opened; the units ordered."""
        changed = True
        while changed:
            changed, kept = False, []
            for u in units:
                if len(u.nodes) == 1 or self.convex(u.nodes):
                    kept.append(u)
                else:
                    kept += self._open(prefix, u)
                    changed = True
            units = kept
            if changed:
                continue
            units, cycle = self._order(units)
            if not any(cycle):
                break
            opened = []
            for u, on in zip(units, cycle):
                if on and len(u.nodes) > 1:
                    opened += self._open(prefix, u)
                    changed = True
                else:
                    opened.append(u)
            units = opened
        return units

    def units(self, prefix):
        """(the prefix passed through, its units): settled; on the first level, a wrapper
        opened (and again)."""
        asked = prefix
        if asked not in self._units:
            prefix, groups = self.children(prefix)
            units = [self._unit(prefix, prefix + seg, ids) for seg, ids in groups.items()]
            units, wrapped = self._settle(prefix, units), False
            while not asked and (wrapper := self._wrapper(units)) is not None:
                units = units[:wrapper] + self._open(prefix, units[wrapper]) + \
                    units[wrapper + 1:]
                units, wrapped = self._settle(prefix, units), True
            # A wrapper opened: the first level's ids name it by "" (its own prefix's level
            # opens none).
            self._units[asked] = ("" if wrapped else prefix, units)
        return self._units[asked]

    @staticmethod
    def _wrapper(units):
        """The first level's wrapper: on a level of 5 units or fewer, the group of 16 nodes or
        more holding 2/3 of its nodes, if any."""
        if not units or len(units) > 5:
            return None
        total = sum(len(u.nodes) for u in units)
        largest = max(range(len(units)), key=lambda u: (len(units[u].nodes), -u))
        return largest if len(units[largest].nodes) >= 16 and \
            3 * len(units[largest].nodes) >= 2 * total else None

    def parse(self, box_id):
        """(kind, units, [begin, end) as a folded box, [begin, end) as a level) of an id."""
        kind, _, rest = box_id.partition(":")
        if kind == "n":
            return "n", None, None, None
        if kind == "g":
            units = self.units(rest)[1]
            return "g", units, (0, len(units)), (0, len(units))
        if kind == "k":
            begin, end, prefix = rest.split(":", 2)
            units = self.units(prefix)[1]
            return "k", units, (int(begin), int(end)), (int(begin), int(end))
        begin, period, count, shown, prefix = rest.split(":", 4)
        b, p, c, s = map(int, (begin, period, count, shown))
        units = self.units(prefix)[1]
        return "r", units, (b, b + p * c), (b + s * p, b + (s + 1) * p)

    def run_blocks(self, run_id):
        """The blocks of run `run_id` (an r: id), each its drawn nodes sorted, and the index of
        the block shown."""
        if run_id not in self._run_blocks:
            _, units, (begin, end), (shown_begin, shown_end) = self.parse(run_id)
            period = shown_end - shown_begin
            blocks = [sorted(i for u in units[at:at + period] for i in u.nodes)
                      for at in range(begin, end, period)]
            self._run_blocks[run_id] = (blocks, (shown_begin - begin) // period)
        return self._run_blocks[run_id]

    def contents(self, box_id, as_level=False):
        """The drawn nodes `box_id` stands for, as a folded box or (as_level) unfolded."""
        kind, units, box, level = self.parse(box_id)
        if kind == "n":
            return [int(box_id[2:])]
        begin, end = level if as_level else box
        return [i for u in units[begin:end] for i in u.nodes]

    def unit_names(self, box_id):
        """The names of the units of the prefix of `box_id` (a k: or r: id)."""
        return [u.name for u in self.parse(box_id)[1]]

    def inside(self, i):
        """Drawn node i and its guests."""
        return [i] + self.guests.get(i, [])

    def node_box(self, i, graph_path):
        """What node box n:i says of weights, constants and subgraphs."""
        shown = self.shown(i)
        reads = [x for j in [i] + shown for x in self.nodes[j].input if x in self.initializers]
        constants = []
        for g in shown:
            node, out = self.nodes[g], (list(self.nodes[g].output) or [""])[0]
            attrs = {a.name: a for a in node.attribute}
            t = attrs["value"].t if node.op_type == "Constant" and "value" in attrs else None
            text = None
            if t is not None:
                name = dtype_name(t.data_type)
                text = None if name is None else name + "[" + ", ".join(map(str, t.dims)) + "]"
            constants.append({"op": node.op_type, "name": out,
                              "type": text if t is not None else self.value_type(out),
                              "node": g, "shared": self.host[g] != i})
        base = (graph_path + "/" if graph_path else "") + f"{i}."
        subgraphs = []
        for a in self.nodes[i].attribute:
            if a.HasField("g"):
                subgraphs.append({"attribute": a.name, "graph": base + a.name})
            subgraphs += [{"attribute": f"{a.name}[{k}]", "graph": f"{base}{a.name}.{k}"}
                          for k in range(len(a.graphs))]
        quantized = any(graph_folding.quantized_op(self.nodes[j]) for j in [i] + shown)
        return {"quantized": quantized,
                "weights": [{"name": x, "type": self.value_type(x)} for x in reads[:4]],
                "more_weights": max(0, len(reads) - 4), "constants": constants[:3],
                "more_constants": max(0, len(constants) - 3), "subgraphs": subgraphs}
