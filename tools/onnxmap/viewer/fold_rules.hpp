#pragma once
// The graph page's folding rules on names, in one place (docs/view.md, "How the graph folds"):
// what part of a node's or a value's name is a scope (a layer, a module) and what part is only
// a label (an op type with a counter), which ops are quantization plumbing; and the passes that
// apply them to a graph (FoldGraph::finish calls them). tests/unit/fold_rules_test.cpp tests
// them; tests/view/graph_judge.py states them again for the end-to-end tests.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace onnxmap::cli::viewer {

class FoldGraph;

// The length of the scope of `name`, written by (or for) a node of op type `op`: the name up to
// its last segment (segments are cut after each '.' or '/'), less the segments just before it
// that are the op type itself (case and all). "p2o.Conv.12" (Conv) -> "p2o.", "Conv_123" -> "",
// "/stage1/conv_s1/Conv_output_0" -> "/stage1/conv_s1/", "model/conv2d/Conv2D__6" ->
// "model/conv2d/", "model.layers.0.mlp.MatMul" -> "model.layers.0.mlp.".
[[nodiscard]] std::size_t scope_length(std::string_view name, std::string_view op);

// Whether `scope` says where in a model something is: two segments or more ("model.layers.0.",
// "model/conv2d/"), or one after a leading '/' (torch's "/conv_in/"). One segment alone ("p2o.",
// Paddle's "conv2d_450.") is an exporter's prefix or an op's counter, not a layer.
[[nodiscard]] bool telling_scope(std::string_view scope);

// The longest prefix of `a` and `b` that ends at the end of a segment of both.
[[nodiscard]] std::string_view common_scope(std::string_view a, std::string_view b);

// `label` as one segment of a fold path: its '.' and '/' replaced by '\x1f', which no segment
// is cut at (the label stays a leaf of the name tree).
[[nodiscard]] std::string leaf_segment(std::string_view label);

// Where `op` comes in a box's op summary, which names the computation first: 0 for the ops
// that carry a network's weights and its attention (names holding MatMul, Gemm, Conv,
// Attention, Normalization, Softmax, Pool, Einsum; LSTM, GRU, RNN), 2 for shape plumbing (ops
// that compute shapes, indices and layouts: Shape, Gather, Unsqueeze, Reshape, Concat, Cast,
// Constant, ...), 1 for the rest. Counts order ops of one rank.
[[nodiscard]] int summary_rank(std::string_view domain, std::string_view op);

// Quantization plumbing: (Dynamic)QuantizeLinear and DequantizeLinear, of ONNX or com.microsoft.
[[nodiscard]] bool quantize_op(std::string_view domain, std::string_view op);

// An op that computes on quantized values (QLinearConv, ConvInteger, MatMulInteger, ...) or is
// quantization plumbing: a box holding one says "quantized".
[[nodiscard]] bool quantized_op(std::string_view domain, std::string_view op);

// Which nodes are drawn inside another (FoldGraph::host), by three rules, each target resolved
// through chains of them:
//   - a parameter (a node that reads no graph input and no output of a node other than a
//     parameter, so only initializers, constants and parameters' outputs: a Constant,
//     a Reshape, Transpose, Cast or DequantizeLinear of a weight, a chain of them), not a graph
//     output and without subgraphs, is drawn inside its first reader;
//   - an Identity whose one output (not a graph output) feeds one node, inside that node;
//   - then quantization plumbing of an activation (its other inputs parameters or initializers,
//     no output a graph output) inside the node that makes the activation: a QDQ pair reads as
//     the float op before it, with "quantized" on its box.
// Parameters make no edges: a shared weight's readers are not wired to each other.
struct Hosts {
  std::vector<bool> parameter;
  std::vector<std::uint32_t> host;  // itself where it is drawn
};
[[nodiscard]] Hosts place_hosts(const FoldGraph& graph);

// What each drawn node shows inside it (FoldGraph::guests), after place_hosts: the nodes it
// hosts, and the shared weight preparation it reads, hosted by another node (at most
// kSharedGuests a node: a hostile chain read by every node stays linear); in node order, node
// i's at guests[begin[i] .. begin[i + 1]].
inline constexpr std::size_t kSharedGuests = 64;
struct Guests {
  std::vector<std::uint32_t> begin, guests;
};
[[nodiscard]] Guests guests_of(const FoldGraph& graph);

// Each node's fold path and label (FoldGraph::path, label), after place_hosts; the strings they
// view that are no node's name are kept in `made`. Paths may repeat (FoldGraph makes them unique).
struct FoldPaths {
  std::vector<std::string_view> paths, labels;
};
[[nodiscard]] FoldPaths fold_paths(const FoldGraph& graph, std::deque<std::string>& made);

}  // namespace onnxmap::cli::viewer
