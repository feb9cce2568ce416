#pragma once
// The graph page's folding rules on names, in one place (docs/view.md, "How the graph folds"):
// what part of a node's or a value's name is a scope (a layer, a module) and what part is only
// a label (an op type with a counter), and which ops are quantization plumbing. NodeGraph applies
// them (node_graph.cpp: index_hosts, index_paths); tests/view/graph_judge.py states them again
// for the tests.

#include <cstddef>
#include <string>
#include <string_view>

namespace onnxmap::cli::viewer {

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

}  // namespace onnxmap::cli::viewer
