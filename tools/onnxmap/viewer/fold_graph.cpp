// The graph the viewer folds (fold_graph.hpp): each value name interned once, each node's
// values as ids, who makes and who reads each value, then the folding rules applied
// (fold_rules.cpp). Every pass after add_node works on ids: a graph of 300,000 nodes hashes
// each name once, not once per pass.

#include "fold_graph.hpp"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "fold_rules.hpp"
#include "onnxmap/views.hpp"

namespace onnxmap::cli::viewer {

std::uint32_t FoldGraph::intern(std::string_view name) {
  const auto [v, fresh] = values_.intern(name);
  if (fresh) {
    producer_of_.push_back(kNone);
    initializer_of_.push_back(kNone);
    flags_.push_back(0);
  }
  return v;
}

void FoldGraph::reserve(std::size_t nodes, std::size_t values) {
  values_.reserve(values);
  producer_of_.reserve(values);
  initializer_of_.reserve(values);
  flags_.reserve(values);
  names_.reserve(nodes);
  modules_.reserve(nodes);
  op_of_.reserve(nodes);
  node_begin_.reserve(nodes + 1);
  node_outputs_at_.reserve(nodes);
  node_values_.reserve(3 * nodes);
  free_begin_.reserve(nodes + 1);
}

void FoldGraph::add_initializer(std::string_view name) {
  const std::uint32_t v = intern(name);
  if (initializer_of_[v] == kNone) initializer_of_[v] = initializers_;
  ++initializers_;
}

void FoldGraph::add_graph_input(std::string_view name) {
  const std::uint32_t v = intern(name);
  flags_[v] |= kGraphInput;
  if (initializer_of_[v] == kNone) {
    flags_[v] |= kDrawnInput;
    inputs_.push_back(name);
  }
}

void FoldGraph::add_graph_output(std::string_view name) {
  flags_[intern(name)] |= kGraphOutput;
  outputs_.push_back(name);
}

std::uint32_t FoldGraph::op_of(std::string_view type, std::string_view domain) {
  const bool onnx = is_default_domain(domain);
  if (const auto found = onnx ? onnx_op_index_.find(type) : onnx_op_index_.end();
      found != onnx_op_index_.end()) {
    return found->second;
  }
  const std::string qualified = (onnx ? "" : std::string(domain) + ".") + std::string(type);
  const auto [op, fresh] =
      op_index_.try_emplace(qualified, static_cast<std::uint32_t>(op_names_.size()));
  if (fresh) {
    op_names_.push_back(qualified);
    op_types_.push_back(type);
    op_domains_.push_back(domain);
  }
  if (onnx) onnx_op_index_.emplace(type, op->second);
  return op->second;
}

// Who makes each value: the first node that does.
void FoldGraph::add_node(NodeFacts facts, std::span<const std::string_view> inputs,
                         std::span<const std::string_view> outputs,
                         std::span<const std::string_view> subgraph_reads) {
  const auto id = static_cast<std::uint32_t>(names_.size());
  names_.push_back(facts.name);
  modules_.push_back(facts.module.empty() ? std::string_view()
                                          : made_.emplace_back(std::move(facts.module)));
  subgraphs_.push_back(facts.subgraphs);
  op_of_.push_back(op_of(facts.op_type, facts.domain));
  node_begin_.push_back(static_cast<std::uint32_t>(node_values_.size()));
  for (const std::string_view input : inputs) {
    node_values_.push_back(input.empty() ? kNone : intern(input));
  }
  node_outputs_at_.push_back(static_cast<std::uint32_t>(node_values_.size()));
  for (const std::string_view output : outputs) {
    const std::uint32_t v = output.empty() ? kNone : intern(output);
    node_values_.push_back(v);
    if (v != kNone && producer_of_[v] == kNone) producer_of_[v] = id;
  }
  free_begin_.push_back(static_cast<std::uint32_t>(free_.size()));
  free_.insert(free_.end(), subgraph_reads.begin(), subgraph_reads.end());
}

void FoldGraph::finish(bool nested) {
  node_begin_.push_back(static_cast<std::uint32_t>(node_values_.size()));
  free_begin_.push_back(static_cast<std::uint32_t>(free_.size()));
  index_keys();
  index_subgraph_reads(nested);
  index_readers();
  index_producers();
  Hosts hosts = place_hosts(*this);
  parameter_ = std::move(hosts.parameter);
  host_ = std::move(hosts.host);
  Guests guests = guests_of(*this);
  guest_begin_ = std::move(guests.begin);
  guests_ = std::move(guests.guests);
  FoldPaths paths = fold_paths(*this, made_);
  paths_ = std::move(paths.paths);
  labels_ = std::move(paths.labels);
  sort_paths();
  index_order();
  free_ = {};
  free_begin_ = {};
  op_index_ = {};
  onnx_op_index_ = {};
}

// Keys are unique: a node's name, the first time it is given; else "OpType#id", with "'"
// added while a name (of any node) or an earlier key is spelled so. The names are gathered at
// the first key made: most graphs name every node once and need none.
void FoldGraph::index_keys() {
  const std::size_t n = size();
  NameTable taken, names;
  taken.reserve(n);
  keys_.reserve(n);
  for (std::uint32_t id = 0; id < n; ++id) {
    const std::string_view name = names_[id];
    if (!name.empty() && taken.intern(name).second) {
      keys_.push_back(name);
      continue;
    }
    if (names.size() == 0) {
      names.reserve(n);
      for (const std::string_view named : names_) names.intern(named);
    }
    std::string made = std::string(op_types_[op_of_[id]]) + "#" + std::to_string(id);
    while (names.contains(made) || taken.contains(made)) made += "'";
    keys_.push_back(made_.emplace_back(std::move(made)));
    taken.intern(keys_.back());
  }
}

// What the subgraphs of each node read of the graphs around them: of this graph's values, as
// inputs of that node (a control-flow node reads what its branches read, so that an If whose
// branches hold the network is wired to the graph's inputs); in a subgraph (`nested`), values
// of the graphs around it too, drawn as its inputs. A nested graph's own nodes reading outer
// values directly mark them alike.
void FoldGraph::index_subgraph_reads(bool nested) {
  const auto inside = [&](std::uint32_t v) {
    return producer_of_[v] != kNone || initializer_of_[v] != kNone ||
           (flags_[v] & kGraphInput) != 0;
  };
  const auto mark_outer = [&](std::uint32_t v) {
    if ((flags_[v] & kOuter) != 0) return;
    flags_[v] |= kOuter | kDrawnInput;
    inputs_.push_back(values_.name(v));
  };
  for (std::uint32_t id = 0; id < size(); ++id) {
    for (const std::uint32_t v : inputs_of(id)) {
      if (nested && v != kNone && !inside(v)) mark_outer(v);
    }
    std::unordered_set<std::uint32_t> counted;
    for (std::uint32_t k = free_begin_[id]; k < free_begin_[id + 1]; ++k) {
      if (free_[k].empty()) continue;
      const std::uint32_t v = intern(free_[k]);
      if (!counted.insert(v).second) continue;
      if (!inside(v)) {
        if (!nested) continue;  // read from nowhere: check reports it
        mark_outer(v);
      } else if (initializer_of_[v] != kNone && producer_of_[v] == kNone) {
        continue;  // a weight: drawn inside, as parameters are
      }
      subgraph_reads_.emplace_back(v, id);
    }
  }
}

// Who reads each value (readers_of): each node once per input that reads it, in node order,
// then the subgraph reads (value, node), in order.
void FoldGraph::index_readers() {
  const std::size_t n = size(), m = values_.size();
  reader_begin_.assign(m + 1, 0);
  for (std::uint32_t id = 0; id < n; ++id) {
    for (const std::uint32_t v : inputs_of(id)) {
      if (v != kNone) ++reader_begin_[v + 1];
    }
  }
  for (const auto& [v, id] : subgraph_reads_) ++reader_begin_[v + 1];
  for (std::size_t v = 0; v < m; ++v) reader_begin_[v + 1] += reader_begin_[v];
  readers_.resize(reader_begin_[m]);
  std::vector<std::uint32_t> filled(reader_begin_.begin(), reader_begin_.end() - 1);
  for (std::uint32_t id = 0; id < n; ++id) {
    for (const std::uint32_t v : inputs_of(id)) {
      if (v != kNone) readers_[filled[v]++] = id;
    }
  }
  for (const auto& [v, id] : subgraph_reads_) readers_[filled[v]++] = id;
}

// The producers of each node's inputs and their names, in one array each (input_begin_), and
// how many of its inputs are drawn as the graph's inputs; what a node's subgraphs read counts as
// its inputs, after its own.
void FoldGraph::index_producers() {
  const std::size_t n = size();
  input_begin_.reserve(n + 1);
  graph_input_reads_.reserve(n);
  input_producers_.reserve(node_values_.size());
  input_values_.reserve(node_values_.size());
  auto nested = subgraph_reads_.begin();
  for (std::uint32_t id = 0; id < n; ++id) {
    input_begin_.push_back(static_cast<std::uint32_t>(input_producers_.size()));
    std::uint32_t graph_inputs = 0;
    const auto read = [&](std::uint32_t v) {
      const std::uint32_t p = producer_of_[v];
      if (p == kNone) {
        graph_inputs += (flags_[v] & kDrawnInput) != 0;
        return;
      }
      input_producers_.push_back(p);
      input_values_.push_back(values_.name(v));
    };
    for (const std::uint32_t v : inputs_of(id)) {
      if (v != kNone) read(v);
    }
    for (; nested != subgraph_reads_.end() && nested->second == id; ++nested) read(nested->first);
    graph_input_reads_.push_back(graph_inputs);
  }
  input_begin_.push_back(static_cast<std::uint32_t>(input_producers_.size()));
}

// by_path_; a path taken by another node (rare: a name that reads as another's scope and
// label) gets "'" until it is unique, the first node in graph order keeping it.
void FoldGraph::sort_paths() {
  for (bool unique = false; !unique;) {
    by_path_ = sorted_by_name(paths_);
    unique = true;
    for (std::size_t k = 1; k < by_path_.size(); ++k) {
      const std::uint32_t id = by_path_[k];
      if (paths_[by_path_[k - 1]] != paths_[id]) continue;
      paths_[id] = made_.emplace_back(std::string(paths_[id]) + "'");
      unique = false;
    }
  }
}

// The drawn nodes' edges (successors) and their topological order (Kahn's, smallest id first).
void FoldGraph::index_order() {
  const std::size_t n = size();
  Edges edges;
  for (std::uint32_t id = 0; id < n; ++id) {
    if (!drawn(id)) continue;
    for_each_input(id, [&](std::uint32_t producer, std::string_view) {
      if (host_[producer] != id) edges.emplace_back(host_[producer], id);
    });
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  successor_begin_.assign(n + 1, 0);
  for (const auto& [from, to] : edges) {
    ++successor_begin_[from + 1];
    successors_.push_back(to);
  }
  for (std::size_t id = 0; id < n; ++id) successor_begin_[id + 1] += successor_begin_[id];
  position_.assign(n, kNone);
  std::uint32_t next = 0;
  // As ONNX asks, the graph's own order is topological (Kahn's would keep it); else Kahn's, and
  // what a cycle holds back last, by id.
  if (!std::all_of(edges.begin(), edges.end(), [](const auto& e) { return e.first < e.second; })) {
    for (const std::uint32_t id : topological_order(n, edges, true, std::less<>())) {
      position_[id] = next++;
    }
  }
  for (std::uint32_t& place : position_) {
    if (place == kNone) place = next++;
  }
}

std::span<const std::uint32_t> FoldGraph::readers(std::string_view value) const {
  const std::uint32_t v = find_value(value);
  return v == kNone ? std::span<const std::uint32_t>{} : readers_of(v);
}

std::optional<std::uint32_t> FoldGraph::producer(std::string_view value) const {
  const std::uint32_t v = find_value(value);
  if (v == kNone || producer_of_[v] == kNone) return std::nullopt;
  return producer_of_[v];
}

void FoldGraph::order_summary(std::vector<std::pair<std::uint32_t, std::uint32_t>>& ops) const {
  const auto rank = [this](std::uint32_t op) {
    return summary_rank(op_domains_[op], op_types_[op]);
  };
  std::stable_sort(ops.begin(), ops.end(), [&](const auto& a, const auto& b) {
    const int ra = rank(a.first), rb = rank(b.first);
    return ra != rb ? ra < rb : a.second > b.second;
  });
}

std::pair<std::size_t, std::size_t> FoldGraph::path_range(const std::string& prefix) const {
  const auto lo =
      std::lower_bound(by_path_.begin(), by_path_.end(), prefix,
                       [&](std::uint32_t id, const std::string& p) { return paths_[id] < p; });
  const auto hi = std::partition_point(
      lo, by_path_.end(), [&](std::uint32_t id) { return paths_[id].starts_with(prefix); });
  return {static_cast<std::size_t>(lo - by_path_.begin()),
          static_cast<std::size_t>(hi - by_path_.begin())};
}

}  // namespace onnxmap::cli::viewer
