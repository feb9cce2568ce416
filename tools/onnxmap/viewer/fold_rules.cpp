// The folding rules (fold_rules.hpp), and NodeGraph's two passes that apply them: which nodes
// are drawn inside another (index_hosts) and the name path each node folds by (index_paths).

#include "fold_rules.hpp"

#include <algorithm>

#include "name_table.hpp"
#include "node_graph.hpp"

namespace onnxmap::cli::viewer {

namespace {

bool is_cut(char c) {
  return c == '.' || c == '/';
}

// Whether `segment` (without its cut) is `op`.
bool names_op(std::string_view segment, std::string_view op) {
  if (!segment.empty() && is_cut(segment.back())) segment.remove_suffix(1);
  return !op.empty() && segment == op;
}

// Where the segment that ends at `end` starts (its own cut, at end - 1, is part of it).
std::size_t segment_start(std::string_view name, std::size_t end) {
  std::size_t at = end;
  if (at > 0 && is_cut(name[at - 1])) --at;
  while (at > 0 && !is_cut(name[at - 1])) --at;
  return at;
}

// The module path torch's dynamo exporter records for `node` in its `namespace` metadata
// (module_path), as a scope ("model.layers.0.mlp."); "" without that metadata, whatever the
// name says (names are the rules above).
std::string module_scope(const Node& node) {
  for (const StringStringEntry& entry : node.metadata_props()) {
    if (entry.key != "namespace") continue;
    const std::string module = module_path(node);
    return module.empty() ? module : module + ".";
  }
  return {};
}

bool has_subgraphs(const Node& node) {
  const auto attributes = node.attributes();
  return std::any_of(attributes.begin(), attributes.end(),
                     [](Attribute a) { return a.g().has_value() || !a.graphs().empty(); });
}

}  // namespace

std::size_t scope_length(std::string_view name, std::string_view op) {
  std::size_t scope = segment_start(name, name.size());  // the last segment is the label
  while (scope > 0) {
    const std::size_t before = segment_start(name, scope);
    if (!names_op(name.substr(before, scope - before), op)) break;
    scope = before;
  }
  return scope;
}

bool telling_scope(std::string_view scope) {
  int segments = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < scope.size(); ++i) {
    if (!is_cut(scope[i])) continue;
    if (i > start) ++segments;
    start = i + 1;
  }
  return segments >= 2 || (segments == 1 && scope.starts_with('/'));
}

std::string_view common_scope(std::string_view a, std::string_view b) {
  std::size_t end = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size() && a[i] == b[i]; ++i) {
    if (is_cut(a[i])) end = i + 1;
  }
  return a.substr(0, end);
}

std::string leaf_segment(std::string_view label) {
  std::string out(label);
  std::replace_if(out.begin(), out.end(), is_cut, '\x1f');
  return out;
}

int summary_rank(std::string_view domain, std::string_view op) {
  static constexpr std::string_view kComputing[] = {"MatMul",        "Gemm",    "Conv", "Attention",
                                                    "Normalization", "Softmax", "Pool", "Einsum"};
  static constexpr std::string_view kRecurrent[] = {"LSTM", "GRU", "RNN"};
  static constexpr std::string_view kPlumbing[] = {
      "Cast",   "CastLike", "Concat",   "Constant", "ConstantOfShape", "Expand",   "Flatten",
      "Gather", "GatherND", "Identity", "NonZero",  "Range",           "Reshape",  "Shape",
      "Size",   "Slice",    "Split",    "Squeeze",  "Transpose",       "Unsqueeze"};
  const auto holds = [op](std::string_view part) { return op.find(part) != op.npos; };
  const auto is = [op](std::string_view name) { return op == name; };
  if (std::any_of(std::begin(kComputing), std::end(kComputing), holds) ||
      std::any_of(std::begin(kRecurrent), std::end(kRecurrent), is)) {
    return 0;
  }
  const bool plumbing =
      is_default_domain(domain) && std::any_of(std::begin(kPlumbing), std::end(kPlumbing), is);
  return plumbing ? 2 : 1;
}

bool quantize_op(std::string_view domain, std::string_view op) {
  return (is_default_domain(domain) || domain == "com.microsoft") &&
         (op == "QuantizeLinear" || op == "DequantizeLinear" || op == "DynamicQuantizeLinear");
}

bool quantized_op(std::string_view domain, std::string_view op) {
  return quantize_op(domain, op) || op.starts_with("QLinear") || op.ends_with("Integer") ||
         op.starts_with("QGemm") || op.starts_with("QAttention");
}

// Three rules, each target resolved through chains of them:
//   - a parameter (a node that reads no graph input and no output of a node other than a
//     parameter, so only initializers, constants and parameters' outputs: a Constant,
//     a Reshape, Transpose, Cast or DequantizeLinear of a weight, a chain of them), not a graph
//     output and without subgraphs, is drawn inside its first reader;
//   - an Identity whose one output (not a graph output) feeds one node, inside that node;
//   - then quantization plumbing of an activation (its other inputs parameters or initializers,
//     no output a graph output) inside the node that makes the activation: a QDQ pair reads as
//     the float op before it, with "quantized" on its box.
// Parameters make no edges: a shared weight's readers are not wired to each other.
void NodeGraph::index_hosts() {
  const std::size_t n = nodes_.size();
  std::vector<std::uint32_t> into(n, kNone);
  parameter_.assign(n, false);
  const auto made_by_parameter = [&](std::uint32_t v) {  // for the rare quantize ops
    if (producer_of_[v] != kNone) return bool(parameter_[producer_of_[v]]);
    // A subgraph's outer-scope values are drawn as its inputs (index_subgraph_reads).
    return (value_flags_[v] & (kGraphInput | kOuter)) == 0 || initializer_of_[v] != kNone;
  };
  const auto any_graph_output = [&](std::uint32_t id) {
    const auto outputs = outputs_of(id);
    return std::any_of(outputs.begin(), outputs.end(), [&](std::uint32_t v) {
      return v != kNone && (value_flags_[v] & kGraphOutput) != 0;
    });
  };
  for (std::uint32_t id = 0; id < n; ++id) {
    const auto producers = input_producers(id);
    parameter_[id] = graph_input_reads_[id] == 0 &&
                     std::all_of(producers.begin(), producers.end(),
                                 [&](std::uint32_t p) { return bool(parameter_[p]); }) &&
                     !any_graph_output(id) && !has_subgraphs(nodes_[id]);
    const bool identity = !parameter_[id] && op_types_[op_of_[id]] == "Identity" &&
                          is_default_domain(op_domains_[op_of_[id]]) &&
                          outputs_of(id).size() == 1 && !any_graph_output(id);
    if (!parameter_[id] && !identity) continue;
    std::uint32_t first_reader = kNone, readers = 0, one_reader = kNone;
    for (const std::uint32_t out : outputs_of(id)) {
      if (out == kNone) continue;
      for (const std::uint32_t r : readers_of(out)) {
        first_reader = std::min(first_reader, r);
        if (r != one_reader) ++readers;
        one_reader = r;
      }
    }
    into[id] = parameter_[id] ? first_reader : readers == 1 ? one_reader : kNone;
  }
  host_.resize(n);
  const auto resolve = [&] {
    for (std::uint32_t id = 0; id < n; ++id) {
      std::uint32_t at = id;
      // At most n steps: a malformed graph may loop.
      for (std::size_t steps = 0; into[at] != kNone && steps < n && into[at] != id; ++steps) {
        at = into[at];
      }
      host_[id] = at;
    }
  };
  resolve();
  for (std::uint32_t id = 0; id < n; ++id) {
    const std::uint32_t op = op_of_[id];
    if (host_[id] != id || !quantize_op(op_domains_[op], op_types_[op]) || any_graph_output(id)) {
      continue;
    }
    const auto inputs = inputs_of(id);
    const std::uint32_t p = inputs.empty() || inputs[0] == kNone ? kNone : producer_of_[inputs[0]];
    if (p == kNone || host_[p] == id) continue;
    if (!std::all_of(std::next(inputs.begin()), inputs.end(),
                     [&](std::uint32_t v) { return v == kNone || made_by_parameter(v); })) {
      continue;
    }
    into[id] = p;
  }
  resolve();  // what a node of the plumbing hosted follows it, and DequantizeLinear its Quantize
  index_guests();
}

// Each node's fold path: scope + leaf_segment(label). The scope is its name's where that tells
// where it is (telling_scope); else the module path in its `namespace` metadata, where torch's
// dynamo exporter, naming nodes flatly (node_MatMul_12), keeps it; else, for an unnamed
// node (or, in a graph of module paths, one without: a node its optimizer made), the first of
// these that tells where it is: its output values' (torch
// writes the module path there when it leaves nodes unnamed), its readers' common scope (in
// reverse graph order, so that a chain of unnamed nodes takes the scope of what it feeds) where
// it reads another node's output (a node that reads only the graph's inputs and parameters,
// such as an embedding, starts the graph: it is not put inside the layer it feeds); and so
// for quantization plumbing whose name has no scope (the quantization of a graph input is part
// of the layer that reads it). The label is the rest of its name where the scope is the name's,
// else its key.
void NodeGraph::index_paths() {
  const std::size_t n = nodes_.size();
  std::vector<std::string_view> scope(n);
  std::vector<bool> from_name(n, false);
  bool modules = false;  // whether some node has a module path in its metadata
  for (std::uint32_t id = 0; id < n; ++id) {
    const std::string_view name = names_[id];
    const std::string_view op = op_types_[op_of_[id]];
    scope[id] = name.substr(0, scope_length(name, op));
    from_name[id] = true;
    if (telling_scope(scope[id])) continue;
    if (const std::string module = module_scope(nodes_[id]); !module.empty()) {
      scope[id] = made_paths_.emplace_back(module);
      from_name[id] = false;
      modules = true;
      continue;
    }
    if (!name.empty()) continue;
    for (const std::uint32_t v : outputs_of(id)) {
      if (v == kNone) continue;
      const std::string_view out = values_.name(v);
      const std::string_view s = out.substr(0, scope_length(out, op));
      if (!telling_scope(s)) continue;
      scope[id] = s;
      from_name[id] = false;
      break;
    }
  }
  for (std::uint32_t id = static_cast<std::uint32_t>(n); id-- > 0;) {
    if (!from_name[id] || !scope[id].empty()) continue;
    const auto producers = input_producers(id);
    // Where nodes carry module paths, one without (an optimizer's Split) is as if unnamed.
    const bool unnamed_inner = (names_[id].empty() || modules) &&
                               std::any_of(producers.begin(), producers.end(),
                                           [&](std::uint32_t p) { return !parameter_[p]; });
    const std::uint32_t op = op_of_[id];
    if (!unnamed_inner && !quantize_op(op_domains_[op], op_types_[op])) continue;
    std::optional<std::string_view> common;
    for (const std::uint32_t out : outputs_of(id)) {
      if (out == kNone) continue;
      for (const std::uint32_t r : readers_of(out)) {
        if (host_[r] == host_[id]) continue;
        common = common ? common_scope(*common, scope[host_[r]]) : scope[host_[r]];
      }
    }
    if (common && telling_scope(*common)) {
      scope[id] = *common;
      from_name[id] = false;
    }
  }
  paths_.resize(n);
  labels_.resize(n);
  for (std::uint32_t id = 0; id < n; ++id) {
    const std::string_view key = keys_[id];
    const bool named = from_name[id] && key == names_[id];
    labels_[id] = named ? key.substr(scope[id].size()) : key;
    if (named && labels_[id].find_first_of("./") == std::string_view::npos) {
      paths_[id] = key;  // the name itself: nothing to make
    } else {
      paths_[id] = made_paths_.emplace_back(std::string(scope[id]) + leaf_segment(labels_[id]));
    }
  }
  sort_paths();
}

// by_path_; a path taken by another node (rare: a name that reads as another's scope and
// label) gets "'" until it is unique, the first node in graph order keeping it.
void NodeGraph::sort_paths() {
  for (bool unique = false; !unique;) {
    by_path_ = sorted_by_name(paths_);
    unique = true;
    for (std::size_t k = 1; k < by_path_.size(); ++k) {
      const std::uint32_t id = by_path_[k];
      if (paths_[by_path_[k - 1]] != paths_[id]) continue;
      paths_[id] = made_paths_.emplace_back(std::string(paths_[id]) + "'");
      unique = false;
    }
  }
}

}  // namespace onnxmap::cli::viewer
