// The folding rules (fold_rules.hpp), and the passes that apply them to a graph: which nodes
// are drawn inside another (place_hosts, guests_of) and the name path each node folds by
// (fold_paths).

#include "fold_rules.hpp"

#include <algorithm>
#include <optional>

#include "fold_graph.hpp"
#include "onnxmap/views.hpp"

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

namespace {

constexpr std::uint32_t kNone = FoldGraph::kNone;

bool any_graph_output(const FoldGraph& graph, std::uint32_t id) {
  const auto outputs = graph.outputs_of(id);
  return std::any_of(outputs.begin(), outputs.end(),
                     [&](std::uint32_t v) { return v != kNone && graph.graph_output(v); });
}

// Where parameter or Identity `id` is drawn by the first two rules: a parameter's first reader,
// an Identity's one reader; kNone where neither.
std::uint32_t drawn_into(const FoldGraph& graph, std::uint32_t id, bool parameter) {
  std::uint32_t first_reader = kNone, readers = 0, one_reader = kNone;
  for (const std::uint32_t out : graph.outputs_of(id)) {
    if (out == kNone) continue;
    for (const std::uint32_t r : graph.readers_of(out)) {
      first_reader = std::min(first_reader, r);
      if (r != one_reader) ++readers;
      one_reader = r;
    }
  }
  return parameter ? first_reader : readers == 1 ? one_reader : kNone;
}

// Each node's host: `into` followed to its end (at most n steps: a malformed graph may loop).
void resolve(const std::vector<std::uint32_t>& into, std::vector<std::uint32_t>& host) {
  const std::size_t n = into.size();
  host.resize(n);
  for (std::uint32_t id = 0; id < n; ++id) {
    std::uint32_t at = id;
    for (std::size_t steps = 0; into[at] != kNone && steps < n && into[at] != id; ++steps) {
      at = into[at];
    }
    host[id] = at;
  }
}

// The third rule: the node quantization plumbing `id` is drawn inside (the maker of its first
// input), or kNone.
std::uint32_t quantized_into(const FoldGraph& graph, const Hosts& hosts, std::uint32_t id) {
  const std::uint32_t op = graph.op(id);
  if (hosts.host[id] != id || !quantize_op(graph.op_domain(op), graph.op_type(op)) ||
      any_graph_output(graph, id)) {
    return kNone;
  }
  const auto made_by_parameter = [&](std::uint32_t v) {
    const std::uint32_t p = graph.producer_of(v);
    if (p != kNone) return bool(hosts.parameter[p]);
    // A subgraph's outer-scope values are drawn as its inputs (index_subgraph_reads).
    return (!graph.graph_input(v) && !graph.outer(v)) || graph.initializer_of(v) != kNone;
  };
  const auto inputs = graph.inputs_of(id);
  const std::uint32_t p =
      inputs.empty() || inputs[0] == kNone ? kNone : graph.producer_of(inputs[0]);
  if (p == kNone || hosts.host[p] == id) return kNone;
  const bool others = std::all_of(std::next(inputs.begin()), inputs.end(), [&](std::uint32_t v) {
    return v == kNone || made_by_parameter(v);
  });
  return others ? p : kNone;
}

}  // namespace

Hosts place_hosts(const FoldGraph& graph) {
  const std::size_t n = graph.size();
  std::vector<std::uint32_t> into(n, kNone);
  Hosts hosts;
  hosts.parameter.assign(n, false);
  for (std::uint32_t id = 0; id < n; ++id) {
    const auto producers = graph.input_producers(id);
    const bool parameter = graph.graph_input_reads(id) == 0 &&
                           std::all_of(producers.begin(), producers.end(),
                                       [&](std::uint32_t p) { return bool(hosts.parameter[p]); }) &&
                           !any_graph_output(graph, id) && !graph.has_subgraphs(id);
    hosts.parameter[id] = parameter;
    const std::uint32_t op = graph.op(id);
    const bool identity = !parameter && graph.op_type(op) == "Identity" &&
                          is_default_domain(graph.op_domain(op)) &&
                          graph.outputs_of(id).size() == 1 && !any_graph_output(graph, id);
    if (parameter || identity) into[id] = drawn_into(graph, id, parameter);
  }
  resolve(into, hosts.host);
  for (std::uint32_t id = 0; id < n; ++id) {
    if (const std::uint32_t p = quantized_into(graph, hosts, id); p != kNone) into[id] = p;
  }
  resolve(into, hosts.host);  // what the plumbing hosted follows it, DequantizeLinear its Quantize
  return hosts;
}

Guests guests_of(const FoldGraph& graph) {
  const std::size_t n = graph.size();
  std::vector<std::uint32_t> hosted_begin(n + 1, 0), hosted;
  for (std::uint32_t id = 0; id < n; ++id) {
    if (!graph.drawn(id)) ++hosted_begin[graph.host(id) + 1];
  }
  for (std::size_t id = 0; id < n; ++id) hosted_begin[id + 1] += hosted_begin[id];
  hosted.resize(hosted_begin[n]);
  std::vector<std::uint32_t> filled(hosted_begin.begin(), hosted_begin.end() - 1);
  for (std::uint32_t id = 0; id < n; ++id) {
    if (!graph.drawn(id)) hosted[filled[graph.host(id)]++] = id;
  }
  Guests out;
  out.begin.assign(n + 1, 0);
  out.guests.reserve(hosted.size());
  std::vector<std::uint32_t> seen(n, kNone);  // seen[p] == id: p is inside id already
  std::vector<std::uint32_t> inside;          // id, then its guests as they are found
  for (std::uint32_t id = 0; id < n; ++id) {
    const std::size_t first = out.guests.size();
    if (graph.drawn(id)) {
      inside.assign(1, id);
      seen[id] = id;
      for (std::uint32_t k = hosted_begin[id]; k < hosted_begin[id + 1]; ++k) {
        inside.push_back(hosted[k]);
        seen[hosted[k]] = id;
      }
      std::size_t shared = 0;
      for (std::size_t k = 0; k < inside.size() && shared < kSharedGuests; ++k) {
        for (const std::uint32_t p : graph.input_producers(inside[k])) {
          if (!graph.parameter(p) || seen[p] == id || shared == kSharedGuests) continue;
          seen[p] = id;
          inside.push_back(p);  // not hosted by id (those are seen): shared
          ++shared;
        }
      }
      out.guests.insert(out.guests.end(), std::next(inside.begin()), inside.end());
      std::sort(out.guests.begin() + static_cast<std::ptrdiff_t>(first), out.guests.end());
    }
    out.begin[id + 1] = static_cast<std::uint32_t>(out.guests.size());
  }
  return out;
}

namespace {

// The scope of each node from its name, its module path, or (unnamed) its outputs' names,
// where that tells where it is; `from_name`: the name's (telling or not).
void own_scopes(const FoldGraph& graph, std::vector<std::string_view>& scope,
                std::vector<bool>& from_name, bool& modules) {
  for (std::uint32_t id = 0; id < graph.size(); ++id) {
    const std::string_view name = graph.name(id);
    const std::string_view op = graph.op_type(graph.op(id));
    scope[id] = name.substr(0, scope_length(name, op));
    from_name[id] = true;
    if (telling_scope(scope[id])) continue;
    if (!graph.module(id).empty()) {
      scope[id] = graph.module(id);
      from_name[id] = false;
      modules = true;
      continue;
    }
    if (!name.empty()) continue;
    for (const std::uint32_t v : graph.outputs_of(id)) {
      if (v == kNone) continue;
      const std::string_view out = graph.value_name(v);
      const std::string_view s = out.substr(0, scope_length(out, op));
      if (!telling_scope(s)) continue;
      scope[id] = s;
      from_name[id] = false;
      break;
    }
  }
}

// The scope of nodes still without one that read another node's output, or are quantization
// plumbing: their readers' common scope, in reverse graph order.
void readers_scopes(const FoldGraph& graph, bool modules, std::vector<std::string_view>& scope,
                    std::vector<bool>& from_name) {
  for (auto id = static_cast<std::uint32_t>(graph.size()); id-- > 0;) {
    if (!from_name[id] || !scope[id].empty()) continue;
    const auto producers = graph.input_producers(id);
    // Where nodes carry module paths, one without (an optimizer's Split) is as if unnamed.
    const bool unnamed_inner = (graph.name(id).empty() || modules) &&
                               std::any_of(producers.begin(), producers.end(),
                                           [&](std::uint32_t p) { return !graph.parameter(p); });
    const std::uint32_t op = graph.op(id);
    if (!unnamed_inner && !quantize_op(graph.op_domain(op), graph.op_type(op))) continue;
    std::optional<std::string_view> common;
    for (const std::uint32_t out : graph.outputs_of(id)) {
      if (out == kNone) continue;
      for (const std::uint32_t r : graph.readers_of(out)) {
        const std::uint32_t host = graph.host(r);
        if (host == graph.host(id)) continue;
        common = common ? common_scope(*common, scope[host]) : scope[host];
      }
    }
    if (common && telling_scope(*common)) {
      scope[id] = *common;
      from_name[id] = false;
    }
  }
}

}  // namespace

// Each node's fold path: scope + leaf_segment(label). The scope is its name's where that tells
// where it is (telling_scope); else the module path in its `namespace` metadata, where torch's
// dynamo exporter, naming nodes flatly (node_MatMul_12), keeps it; else, for an unnamed
// node (or, in a graph of module paths, one without: a node its optimizer made), the first of
// these that tells where it is: its output values' (torch writes the module path there when it
// leaves nodes unnamed), its readers' common scope (in reverse graph order, so that a chain of
// unnamed nodes takes the scope of what it feeds) where it reads another node's output (a node
// that reads only the graph's inputs and parameters, such as an embedding, starts the graph: it
// is not put inside the layer it feeds); and so for quantization plumbing whose name has no
// scope (the quantization of a graph input is part of the layer that reads it). The label is
// the rest of its name where the scope is the name's, else its key.
FoldPaths fold_paths(const FoldGraph& graph, std::deque<std::string>& made) {
  const std::size_t n = graph.size();
  std::vector<std::string_view> scope(n);
  std::vector<bool> from_name(n, false);
  bool modules = false;  // whether some node has a module path in its metadata
  own_scopes(graph, scope, from_name, modules);
  readers_scopes(graph, modules, scope, from_name);
  FoldPaths out;
  out.paths.resize(n);
  out.labels.resize(n);
  for (std::uint32_t id = 0; id < n; ++id) {
    const std::string_view key = graph.key(id);
    const bool named = from_name[id] && key == graph.name(id);
    out.labels[id] = named ? key.substr(scope[id].size()) : key;
    if (named && out.labels[id].find_first_of("./") == std::string_view::npos) {
      out.paths[id] = key;  // the name itself: nothing to make
    } else {
      out.paths[id] = made.emplace_back(std::string(scope[id]) + leaf_segment(out.labels[id]));
    }
  }
  return out;
}

}  // namespace onnxmap::cli::viewer
