#!/usr/bin/env python3
"""Models for the viewer's graph page: four shapes of dataflow graph, each written to a file and
checked with onnx.checker.

Usage: graph_models.py KIND OUT.onnx    (KIND: paddle, torch, flat, subgraphs)

As a module (tests/view/ on sys.path): write(kind, path) writes one and returns its node count;
KINDS names the kinds. The kinds:

  paddle     a PaddleOCR-like DB text detector in the shape paddle2onnx ("p2o", opset 11) gives
             it: PADDLE_NODES nodes, none named, PADDLE_CONSTANTS of them Constant nodes each
             feeding one node; tensors named like Paddle's variables (conv2d_12.tmp_0).
  torch      a two-layer transformer encoder exported by torch.onnx.export itself (opset 14);
             fails, saying why, where torch cannot export.
  flat       FLAT_NODES nodes named f"n{i}_{op}": FLAT_LAYERS identical transformer-like layers
             of FLAT_LAYER_OPS ops (hidden 4) and a final LayerNormalization, written in seconds.
  subgraphs  a small graph with If (a Loop nested in its then branch), Loop and Scan, whose
             bodies read values of the enclosing graph.

Weights are random (a fixed seed), float32, small. Python's standard library, numpy, python3-onnx
and (for torch) Debian's python3-torch.
"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

KINDS = ("paddle", "torch", "flat", "subgraphs")


def check(path: str, full: bool = True) -> None:
    """onnx.checker on the file at path; with full, also strict shape inference (into a scratch
    file, since onnx's path form would rewrite the model in place)."""
    onnx.checker.check_model(path)
    if full:
        fd, scratch = tempfile.mkstemp(suffix=".onnx", dir=os.path.dirname(os.path.abspath(path)))
        os.close(fd)
        try:
            onnx.shape_inference.infer_shapes_path(path, scratch, check_type=True, strict_mode=True)
        finally:
            os.unlink(scratch)


def _vi(name: str, shape: list, elem: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    """A graph input's or output's ValueInfoProto (dims: ints, or strings for named dims)."""
    return helper.make_tensor_value_info(name, elem, shape)


# ---------------------------------------------------------------------------------------------
# paddle: a DB text detector (MobileNetV3 backbone, RSE-FPN neck, DB head) as p2o writes it.

PADDLE_NODES = 682          # the real export: 672 nodes, 342 of them Constant nodes
PADDLE_CONSTANTS = 340
# MobileNetV3-large's residual units: kernel, expanded channels, out channels, SE, act, stride
# (channels scaled down, so the weights stay small; units 5 and 6 use hardswish, which brings the
# node and Constant counts near the real export's).
MBV3_UNITS = [(3, 16, 16, False, "relu", 1), (3, 32, 24, False, "relu", 2),
              (3, 40, 24, False, "relu", 1), (5, 40, 40, True, "relu", 2)] + [
              (5, 64, 40, True, "hardswish", 1)] * 2 + [(3, 120, 80, False, "hardswish", 2)] + [
              (3, 96, 80, False, "hardswish", 1)] * 3 + [
              (3, 160, 112, True, "hardswish", 1), (3, 224, 112, True, "hardswish", 1),
              (5, 224, 160, True, "hardswish", 2), (5, 320, 160, True, "hardswish", 1),
              (5, 320, 160, True, "hardswish", 1)]


class _P2OGraph:
    """The nodes and initializers of a p2o-style export, with Paddle's variable names: a layer's
    outputs are "<layer>_<n>.tmp_0", its parameters "<layer>_<n>.w_0"/".b_0"; tensors p2o makes
    itself are "p2o.<Op>.<n>". No node gets a name. Conv and ConvTranspose weights are
    initializers; the other parameters (BatchNormalization's four, biases) are Constant nodes,
    as p2o writes every parameter, and so is every small operand p2o adds (hardswish's 3 and 6,
    Clip's bounds, Resize's roi and scales, Reshape's shape): each feeds exactly one node."""

    def __init__(self, seed: int = 0):
        self.nodes, self.inits, self.count = [], [], {}
        self.rng = np.random.default_rng(seed)

    def var(self, layer: str) -> str:
        """A fresh Paddle layer name: conv2d_0, conv2d_1, ..."""
        n = self.count.get(layer, 0)
        self.count[layer] = n + 1
        return f"{layer}_{n}"

    def op(self, op_type: str, inputs: list, out: str = "", **attrs) -> str:
        """Adds an unnamed node; out defaults to a p2o helper name. Returns its output."""
        out = out or "p2o." + self.var(op_type).replace("_", ".")
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def const(self, values, name: str = "", dtype=np.float32) -> str:
        """A Constant node holding values; returns its output."""
        name = name or "p2o." + self.var("Constant").replace("_", ".")
        return self.op("Constant", [], name,
                       value=numpy_helper.from_array(np.asarray(values, dtype=dtype), name))

    def param(self, name: str, shape, scale: float = 0.1, init: bool = False) -> str:
        """A random parameter, as an initializer (init) or a Constant node."""
        values = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        if init:
            self.inits.append(numpy_helper.from_array(values, name))
            return name
        return self.const(values, name)

    def act(self, x: str, act: str) -> str:
        """relu as Relu; hardswish as opset 11 has it: x * Clip(x + 3, 0, 6) / 6."""
        if act == "relu":
            return self.op("Relu", [x], self.var("relu") + ".tmp_0")
        shifted = self.op("Add", [x, self.const([3.0])])
        clipped = self.op("Clip", [shifted, self.const(0.0), self.const(6.0)])
        return self.op("Div", [self.op("Mul", [x, clipped]), self.const([6.0])],
                       self.var("hardswish") + ".tmp_0")

    def conv(self, x, cin, cout, k, stride=1, groups=1, bias=False, bn=True, act=None):
        """Conv (weights an initializer), then BatchNormalization and act where asked."""
        layer = self.var("conv2d")
        inputs = [x, self.param(layer + ".w_0", (cout, cin // groups, k, k), init=True)]
        if bias:
            inputs.append(self.param(layer + ".b_0", (cout,)))
        y = self.op("Conv", inputs, layer + ".tmp_0", kernel_shape=[k, k], strides=[stride] * 2,
                    pads=[k // 2] * 4, dilations=[1, 1], group=groups)
        if bn:
            y = self.batch_norm(y, cout)
        return self.act(y, act) if act else y

    def batch_norm(self, x, c):
        """BatchNormalization with its four parameters as Constant nodes."""
        layer = self.var("batch_norm")
        params = [self.param(layer + ".w_0", (c,)), self.param(layer + ".b_0", (c,)),
                  self.param(layer + ".w_1", (c,)),
                  self.const(np.abs(self.rng.standard_normal(c)) + 0.5, layer + ".w_2")]
        return self.op("BatchNormalization", [x] + params, layer + ".tmp_2",
                       epsilon=1e-5, momentum=0.9)

    def se(self, x, c):
        """Squeeze-excite: GlobalAveragePool, 1x1 Conv, Relu, 1x1 Conv, HardSigmoid, Mul."""
        pooled = self.op("GlobalAveragePool", [x], self.var("pool2d") + ".tmp_0")
        h = self.conv(pooled, c, max(c // 4, 8), 1, bias=True, bn=False, act="relu")
        h = self.conv(h, max(c // 4, 8), c, 1, bias=True, bn=False)
        gate = self.op("HardSigmoid", [h], self.var("hardsigmoid") + ".tmp_0", alpha=0.2, beta=0.5)
        return self.op("Mul", [x, gate], self.var("elementwise_mul"))

    def add(self, a, b):
        """Paddle's elementwise_add."""
        return self.op("Add", [a, b], self.var("elementwise_add"))

    def upsample(self, x, factor):
        """nearest_interp_v2 by a scale: Resize with Constant roi and scales."""
        return self.op("Resize", [x, self.const(np.zeros(0)), self.const([1, 1, factor, factor])],
                       self.var("nearest_interp_v2") + ".tmp_0", mode="nearest",
                       coordinate_transformation_mode="asymmetric", nearest_mode="floor")

    def conv_transpose(self, x, cin, cout):
        """conv2d_transpose (2x2, stride 2), then its bias added as Paddle's elementwise_add with
        axis=1, which p2o writes as Reshape(bias, Constant [1, C, 1, 1]) and Add."""
        layer = self.var("conv2d_transpose")
        w = self.param(layer + ".w_0", (cin, cout, 2, 2), init=True)
        y = self.op("ConvTranspose", [x, w], layer + ".tmp_0", kernel_shape=[2, 2],
                    strides=[2, 2], pads=[0, 0, 0, 0], dilations=[1, 1], group=1)
        bias = self.op("Reshape", [self.param(layer + ".b_0", (cout,)),
                                   self.const([1, cout, 1, 1], dtype=np.int64)])
        return self.add(y, bias)


def _db_detector(g: _P2OGraph) -> str:
    """Builds the detector from input "x"; returns the output's name."""
    x = g.conv("x", 3, 16, 3, stride=2, act="hardswish")
    cin, features = 16, []
    for i, (k, exp, cout, se, act, stride) in enumerate(MBV3_UNITS):
        if stride == 2 and i > 1:
            features.append((x, cin))
        h = g.conv(x, cin, exp, 1, act=act)
        h = g.conv(h, exp, exp, k, stride=stride, groups=exp, act=act)
        if se:
            h = g.se(h, exp)
        h = g.conv(h, exp, cout, 1)
        x, cin = (g.add(x, h) if stride == 1 and cin == cout else h), cout
    features.append((g.conv(x, cin, 320, 1, act="hardswish"), 320))
    # RSE-FPN neck: a 1x1 conv with a residual squeeze-excite on each level, top-down sums,
    # a 3x3 conv with the same on each, everything upsampled to stride 4 and concatenated.
    width = 48

    def rse(x, cin, cout, k):
        y = g.conv(x, cin, cout, k, bn=False)
        return g.add(y, g.se(y, cout))

    lateral = [rse(f, c, width, 1) for f, c in features]
    for i in (2, 1, 0):
        lateral[i] = g.add(lateral[i], g.upsample(lateral[i + 1], 2))
    outs = [rse(f, width, width // 4, 3) for f in lateral]
    outs = [g.upsample(o, 2 ** i) if i else o for i, o in enumerate(outs)]
    fused = g.op("Concat", outs[::-1], g.var("concat") + ".tmp_0", axis=1)
    # DB head (the probability map only, as at inference).
    h = g.conv(fused, width, width // 4, 3, act="relu")
    h = g.act(g.batch_norm(g.conv_transpose(h, width // 4, width // 4), width // 4), "relu")
    return g.op("Sigmoid", [g.conv_transpose(h, width // 4, 1)], g.var("sigmoid") + ".tmp_0")


def paddle_model() -> onnx.ModelProto:
    """The p2o-style detector: input x FLOAT [N, 3, H, W], output sigmoid_0.tmp_0."""
    g = _P2OGraph()
    out = _db_detector(g)
    dims = ["p2o.DynamicDimension.0", 3, "p2o.DynamicDimension.1", "p2o.DynamicDimension.2"]
    graph = helper.make_graph(g.nodes, "Model from PaddlePaddle.", [_vi("x", dims)],
                              [_vi(out, [dims[0], 1, dims[2], dims[3]])], g.inits)
    return helper.make_model(graph, producer_name="p2o", producer_version="1.0",
                             opset_imports=[helper.make_opsetid("", 11)], ir_version=6)


# ---------------------------------------------------------------------------------------------
# torch: exported by torch.onnx.export itself.

def torch_model(path: str) -> None:
    """Exports a two-layer transformer encoder (token and position embeddings, pre-norm
    self-attention and a GELU MLP, written out by hand) to path with torch.onnx.export, opset 14,
    dynamic batch and sequence. Raises RuntimeError, saying why, where torch cannot."""
    try:
        import torch
    except ImportError as e:
        raise RuntimeError(f"torch kind: cannot import torch ({e}); install python3-torch") from e
    from torch import nn

    class Block(nn.Module):
        """One pre-norm encoder layer."""
        def __init__(self, d: int, heads: int):
            super().__init__()
            self.d, self.heads, self.norm1, self.norm2 = d, heads, nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, d, h = x.shape[0], x.shape[1], self.d, self.heads
            q, k, v = [z.reshape(b, t, h, d // h).transpose(1, 2)
                       for z in self.qkv(self.norm1(x)).chunk(3, dim=-1)]
            att = torch.softmax(q @ k.transpose(-1, -2) / float(d // h) ** 0.5, dim=-1) @ v
            x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(nn.functional.gelu(self.fc1(self.norm2(x))))

    class Encoder(nn.Module):
        """Embeddings, the layers, a final LayerNorm."""
        def __init__(self, vocab=100, d=32, heads=4, layers=2, max_len=64):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
            self.layers = nn.ModuleList(Block(d, heads) for _ in range(layers))
            self.norm = nn.LayerNorm(d)

        def forward(self, ids):
            x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]).unsqueeze(0))
            for layer in self.layers:
                x = layer(x)
            return self.norm(x)

    torch.manual_seed(0)
    try:
        torch.onnx.export(Encoder().eval(), torch.zeros(1, 8, dtype=torch.long), path,
                          input_names=["input_ids"], output_names=["hidden"], opset_version=14,
                          dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                                        "hidden": {0: "batch", 1: "seq"}})
    except Exception as e:
        raise RuntimeError(f"torch kind: torch {torch.__version__} cannot export: {e}") from e


# ---------------------------------------------------------------------------------------------
# flat: 300,001 nodes named f"n{i}_{op}".

FLAT_LAYER_OPS = 15
FLAT_LAYERS = 20_000
FLAT_NODES = FLAT_LAYERS * FLAT_LAYER_OPS + 1
H = 4                                                   # the hidden size
# One layer, in order: op, the inputs (x: the layer's input; a digit string: the output of that
# op of this layer; anything else: this layer's weight of that name). Pre-norm attention and MLP,
# each with its residual Add.
FLAT_LAYER = [("LayerNormalization", ["x", "ln1.g", "ln1.b"]), ("MatMul", ["0", "wq"]),
              ("MatMul", ["0", "wk"]), ("MatMul", ["0", "wv"]), ("Transpose", ["2"]),
              ("MatMul", ["1", "4"]), ("Softmax", ["5"]), ("MatMul", ["6", "3"]),
              ("MatMul", ["7", "wo"]), ("Add", ["x", "8"]),
              ("LayerNormalization", ["9", "ln2.g", "ln2.b"]), ("MatMul", ["10", "w1"]),
              ("Relu", ["11"]), ("MatMul", ["12", "w2"]), ("Add", ["9", "13"])]
FLAT_WEIGHTS = {"ln1.g": (H,), "ln1.b": (H,), "wq": (H, H), "wk": (H, H), "wv": (H, H),
                "wo": (H, H), "ln2.g": (H,), "ln2.b": (H,), "w1": (H, H), "w2": (H, H)}
assert len(FLAT_LAYER) == FLAT_LAYER_OPS


def flat_model(path: str) -> None:
    """Writes the flat model: input x FLOAT [seq, 4], each layer's weights (initializers) just
    before its nodes. Filled through protobuf's add() rather than helper.make_node: with Debian's
    C++ protobuf that is as fast as serializing by hand (about 1 s for the graph)."""
    model = helper.make_model(helper.make_graph([], "flat", [_vi("x", ["seq", H])], []),
                              producer_name="graph_models", ir_version=8,
                              opset_imports=[helper.make_opsetid("", 17)])
    graph = model.graph
    sizes = {w: int(np.prod(shape)) for w, shape in FLAT_WEIGHTS.items()}
    rng = np.random.default_rng(0)
    values = (rng.standard_normal((FLAT_LAYERS, sum(sizes.values()))) * 0.5).astype(np.float32)
    x, i = "x", 0
    for layer in range(FLAT_LAYERS):
        offset, row, names = 0, values[layer], []
        for w, shape in FLAT_WEIGHTS.items():
            init = graph.initializer.add()
            init.name, init.data_type = f"l{layer}.{w}", TensorProto.FLOAT
            init.dims.extend(shape)
            init.raw_data = row[offset:offset + sizes[w]].tobytes()
            offset += sizes[w]
        for op, inputs in FLAT_LAYER:
            names.append(f"n{i}_{op}")
            node = graph.node.add()
            node.op_type, node.name = op, names[-1]
            node.input.extend(x if a == "x" else names[int(a)] if a.isdigit() else f"l{layer}.{a}"
                              for a in inputs)
            node.output.append(names[-1])
            i += 1
        x = names[-1]
    last = f"n{i}_LayerNormalization"
    graph.node.append(helper.make_node("LayerNormalization", [x, "final.g", "final.b"], [last],
                                       name=last))
    graph.initializer.extend([numpy_helper.from_array(np.ones(H, np.float32), "final.g"),
                              numpy_helper.from_array(np.zeros(H, np.float32), "final.b")])
    graph.output.append(_vi(last, ["seq", H]))
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


# ---------------------------------------------------------------------------------------------
# subgraphs: If (with a Loop inside its then branch), Loop and Scan.

def _graph(name, nodes, inputs, outputs, inits=()):
    """A GraphProto; nodes are (op, inputs, outputs, name, attributes), inputs and outputs
    (name, shape[, element type]), FLOAT unless said."""
    return helper.make_graph(
        [helper.make_node(op, ins, outs, name=n, **attrs) for op, ins, outs, n, attrs in nodes],
        name, [_vi(*v) for v in inputs], [_vi(*v) for v in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits])


def subgraphs_model() -> onnx.ModelProto:
    """x [3, 4] -> MatMul, then If on whether the product's sum is positive; a Loop adding w (an
    initializer of the main graph) to a loop-carried value three times; a Scan keeping a running
    sum of the rows; a Concat of the results. The bodies read the outer scope's x_proj, w and
    scale; then_branch holds a Loop of its own (reading scale, two scopes up)."""
    i64, boolean, f = TensorProto.INT64, TensorProto.BOOL, np.float32
    loop_io = [("iter", [], i64), ("cond_in", [], boolean)]
    inner = _graph("inner_loop_body", [                 # v <- v * scale
        ("Identity", ["cond_in"], ["cond_out"], "inner_cond", {}),
        ("Mul", ["v_in", "scale"], ["v_out"], "inner_scale", {})],
        loop_io + [("v_in", [3, 4])], [("cond_out", [], boolean), ("v_out", [3, 4])])
    then_branch = _graph("then_branch", [
        ("Relu", ["x_proj"], ["then_relu"], "then_relu", {}),
        ("Loop", ["trip_count", "keep_going", "then_relu"], ["then_out"], "then_loop",
         {"body": inner})], [], [("then_out", [3, 4])])
    else_branch = _graph("else_branch", [
        ("Neg", ["x_proj"], ["else_neg"], "else_neg", {}),
        ("Add", ["else_neg", "w"], ["else_out"], "else_add", {})], [], [("else_out", [3, 4])])
    loop_body = _graph("loop_body", [                   # acc <- acc + w, emitting acc * scale
        ("Identity", ["cond_in"], ["cond_out"], "loop_cond", {}),
        ("Add", ["acc_in", "w"], ["acc_out"], "loop_add", {}),
        ("Mul", ["acc_out", "scale"], ["acc_scaled"], "loop_scale", {})],
        loop_io + [("acc_in", [3, 4])],
        [("cond_out", [], boolean), ("acc_out", [3, 4]), ("acc_scaled", [3, 4])])
    scan_body = _graph("scan_body", [                   # sum <- sum + row * scale
        ("Mul", ["row", "scale"], ["row_scaled"], "scan_scale", {}),
        ("Add", ["sum_in", "row_scaled"], ["sum_out"], "scan_add", {}),
        ("Identity", ["sum_out"], ["sum_row"], "scan_emit", {})],
        [("sum_in", [4]), ("row", [4])], [("sum_out", [4]), ("sum_row", [4])])
    main = _graph("subgraphs", [
        ("MatMul", ["x", "proj_w"], ["x_proj"], "proj", {}),
        ("ReduceSum", ["x_proj"], ["total"], "total", {"keepdims": 0}),
        ("Greater", ["total", "zero"], ["positive"], "is_positive", {}),
        ("If", ["positive"], ["branch_out"], "cond_if",
         {"then_branch": then_branch, "else_branch": else_branch}),
        ("Loop", ["trip_count", "keep_going", "branch_out"], ["loop_acc", "loop_scaled"],
         "loop_0", {"body": loop_body}),
        ("Scan", ["scan_init", "loop_acc"], ["scan_sum", "scan_rows"], "scan_0",
         {"body": scan_body, "num_scan_inputs": 1}),
        ("Unsqueeze", ["scan_sum", "axis0"], ["scan_sum_2d"], "unsqueeze", {}),
        ("Concat", ["loop_acc", "scan_rows", "scan_sum_2d"], ["y"], "concat", {"axis": 0})],
        [("x", [3, 4])], [("y", [7, 4]), ("loop_scaled", [3, 3, 4])],
        [("proj_w", np.full((4, 4), 0.25, f)), ("w", np.full(4, 0.5, f)), ("scale", f(2)),
         ("trip_count", np.int64(3)), ("keep_going", np.bool_(True)),
         ("scan_init", np.zeros(4, f)), ("zero", f(0)), ("axis0", np.array([0], np.int64))])
    return helper.make_model(main, producer_name="graph_models",
                             opset_imports=[helper.make_opsetid("", 16)], ir_version=8)


# ---------------------------------------------------------------------------------------------

def write(kind: str, path: str) -> int:
    """Writes the model of that kind to path, checks it (full_check: every kind passes it) and
    returns its main graph's node count."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    if kind in ("paddle", "subgraphs"):
        onnx.save(paddle_model() if kind == "paddle" else subgraphs_model(), path)
    else:
        (torch_model if kind == "torch" else flat_model)(path)
    check(path)
    return len(onnx.load(path, load_external_data=False).graph.node)


def main(argv: list) -> int:
    """The command line: graph_models.py KIND OUT.onnx."""
    if len(argv) != 3 or argv[1] not in KINDS:
        print(f"usage: graph_models.py {{{'|'.join(KINDS)}}} OUT.onnx", file=sys.stderr)
        return 2
    try:
        nodes = write(argv[1], argv[2])
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    print(f"{argv[2]}: {argv[1]}, {nodes} nodes, {os.path.getsize(argv[2])} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
