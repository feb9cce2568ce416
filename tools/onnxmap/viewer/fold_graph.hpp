#pragma once
// The graph the viewer folds (the main graph, or a subgraph of an If, Loop or Scan), as little
// as the folding reads of it: each node's op, name and module path, its inputs and outputs as
// value ids, the graph's inputs, outputs and initializers, what each node's subgraphs read. It
// knows no model: NodeGraph (node_graph.hpp) builds it from one, a test from literals.
//
// finish() applies the folding rules once (fold_rules.hpp): which nodes are drawn inside
// another (weight preparation, quantization plumbing), the name path each node folds by, the
// drawn nodes' edges and a topological order. Then it is immutable: any number of threads read it.

#include <cstdint>
#include <deque>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "name_table.hpp"

namespace onnxmap::cli::viewer {

using Edges = std::vector<std::pair<std::uint32_t, std::uint32_t>>;  // (from, to)

// [0, n) in a topological order of `edges`, or of the edges reversed (`forward` false): among
// those ready, the first by `before`. What a cycle holds back is left out.
template <typename Before>
[[nodiscard]] std::vector<std::uint32_t> topological_order(std::size_t n, const Edges& edges,
                                                           bool forward, Before before) {
  std::vector<std::vector<std::uint32_t>> next(n);
  std::vector<std::uint32_t> waiting(n, 0);
  for (const auto& [from, to] : edges) {
    next[forward ? from : to].push_back(forward ? to : from);
    ++waiting[forward ? to : from];
  }
  const auto later = [&](std::uint32_t a, std::uint32_t b) { return before(b, a); };
  std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, decltype(later)> ready(later);
  for (std::uint32_t u = 0; u < n; ++u) {
    if (waiting[u] == 0) ready.push(u);
  }
  std::vector<std::uint32_t> order;
  while (!ready.empty()) {
    order.push_back(ready.top());
    ready.pop();
    for (const std::uint32_t v : next[order.back()]) {
      if (--waiting[v] == 0) ready.push(v);
    }
  }
  return order;
}

class FoldGraph {
 public:
  static constexpr std::uint32_t kNone = NameTable::kNone;

  // What the folding reads of one node. `module`: the module path torch's dynamo exporter
  // records in the node's `namespace` metadata, as a scope ("model.layers.0.mlp."); "" without.
  struct NodeFacts {
    std::string_view op_type, domain, name;
    std::string module;
    bool subgraphs = false;  // whether an attribute holds a graph
  };

  // Building, in this order: the graph's values, its nodes, then finish(). Every name must
  // outlive the graph (views into the model, or the caller's strings).
  void reserve(std::size_t nodes, std::size_t values);
  void add_initializer(std::string_view name);
  void add_graph_input(std::string_view name);
  void add_graph_output(std::string_view name);
  // `subgraph_reads`: what the graphs of its attributes read and do not make themselves, nested
  // graphs included ("" and repeats are passed over).
  void add_node(NodeFacts facts, std::span<const std::string_view> inputs,
                std::span<const std::string_view> outputs,
                std::span<const std::string_view> subgraph_reads = {});
  // `nested`: a subgraph, whose nodes may read values of the graphs around it.
  void finish(bool nested);

  [[nodiscard]] std::size_t size() const noexcept { return names_.size(); }
  [[nodiscard]] std::string_view name(std::uint32_t id) const { return names_[id]; }
  // The name, or "OpType#id" when empty or taken by an earlier node.
  [[nodiscard]] std::string_view key(std::uint32_t id) const { return keys_[id]; }
  [[nodiscard]] std::string_view module(std::uint32_t id) const { return modules_[id]; }
  [[nodiscard]] bool has_subgraphs(std::uint32_t id) const { return subgraphs_[id]; }
  [[nodiscard]] std::uint32_t op(std::uint32_t id) const { return op_of_[id]; }
  // "MatMul", "com.microsoft.Attention"; and each op's type and domain.
  [[nodiscard]] const std::string& op_name(std::uint32_t op) const { return op_names_[op]; }
  [[nodiscard]] std::string_view op_type(std::uint32_t op) const { return op_types_[op]; }
  [[nodiscard]] std::string_view op_domain(std::uint32_t op) const { return op_domains_[op]; }
  // Sorts a box's op counts (op, count) for its summary: the computation first (fold_rules.hpp:
  // summary_rank), most common first within a rank.
  void order_summary(std::vector<std::pair<std::uint32_t, std::uint32_t>>& ops) const;

  // Values: every name the graph gives one, interned once (value ids index the tables below).
  [[nodiscard]] std::string_view value_name(std::uint32_t v) const { return values_.name(v); }
  // kNone where the graph never names it.
  [[nodiscard]] std::uint32_t find_value(std::string_view name) const { return values_.find(name); }
  // The value ids of node `id`'s inputs and outputs, in order (kNone: an omitted one, "").
  [[nodiscard]] std::span<const std::uint32_t> inputs_of(std::uint32_t id) const {
    return {node_values_.data() + node_begin_[id], node_outputs_at_[id] - node_begin_[id]};
  }
  [[nodiscard]] std::span<const std::uint32_t> outputs_of(std::uint32_t id) const {
    return {node_values_.data() + node_outputs_at_[id], node_begin_[id + 1] - node_outputs_at_[id]};
  }
  // The first node making `v`, or kNone.
  [[nodiscard]] std::uint32_t producer_of(std::uint32_t v) const { return producer_of_[v]; }
  // Its readers, in node order, a node once per input that reads it, then the nodes whose
  // subgraphs read it.
  [[nodiscard]] std::span<const std::uint32_t> readers_of(std::uint32_t v) const {
    return {readers_.data() + reader_begin_[v], reader_begin_[v + 1] - reader_begin_[v]};
  }
  // readers_of and producer_of by name (none where the graph never names it).
  [[nodiscard]] std::span<const std::uint32_t> readers(std::string_view value) const;
  [[nodiscard]] std::optional<std::uint32_t> producer(std::string_view value) const;
  // Its place among the initializers as added, or kNone.
  [[nodiscard]] std::uint32_t initializer_of(std::uint32_t v) const { return initializer_of_[v]; }
  [[nodiscard]] bool graph_input(std::uint32_t v) const { return (flags_[v] & kGraphInput) != 0; }
  [[nodiscard]] bool graph_output(std::uint32_t v) const { return (flags_[v] & kGraphOutput) != 0; }
  // Read from the graphs around this one (a subgraph's outer scope).
  [[nodiscard]] bool outer(std::uint32_t v) const { return (flags_[v] & kOuter) != 0; }
  // The graph's inputs that are not initializers, then (nested) the outer values it reads, in
  // the order first read; its outputs, in order.
  [[nodiscard]] const std::vector<std::string_view>& graph_inputs() const { return inputs_; }
  [[nodiscard]] const std::vector<std::string_view>& graph_outputs() const { return outputs_; }
  // (value, node), in node order: the values of this graph (and, nested, of the graphs around
  // it) that a node's subgraphs read; they count as that node's inputs.
  [[nodiscard]] const std::vector<std::pair<std::uint32_t, std::uint32_t>>& subgraph_reads() const {
    return subgraph_reads_;
  }
  // The producer of each input of `id` that a node produces (its subgraphs' reads included),
  // and that input's name.
  [[nodiscard]] std::span<const std::uint32_t> input_producers(std::uint32_t id) const {
    return {input_producers_.data() + input_begin_[id], input_begin_[id + 1] - input_begin_[id]};
  }
  [[nodiscard]] std::span<const std::string_view> input_values(std::uint32_t id) const {
    return {input_values_.data() + input_begin_[id], input_begin_[id + 1] - input_begin_[id]};
  }
  // How many inputs of `id` (itself, not its guests) are drawn graph inputs.
  [[nodiscard]] std::uint32_t graph_input_reads(std::uint32_t id) const {
    return graph_input_reads_[id];
  }

  // The folding (after finish()). The node `id` is drawn as: itself, or the node it is drawn
  // inside; whether it is a weight's preparation, which makes no edge (for_each_input passes it
  // over); what is drawn inside it (fold_rules.hpp: place_hosts, guests_of).
  [[nodiscard]] std::uint32_t host(std::uint32_t id) const { return host_[id]; }
  [[nodiscard]] bool drawn(std::uint32_t id) const { return host_[id] == id; }
  [[nodiscard]] bool parameter(std::uint32_t id) const { return parameter_[id]; }
  [[nodiscard]] std::span<const std::uint32_t> guests(std::uint32_t id) const {
    return {guests_.data() + guest_begin_[id], guest_begin_[id + 1] - guest_begin_[id]};
  }
  // Calls f(producer, value) for each input of `id` and of its guests that a node other than a
  // parameter produces.
  template <typename F>
  void for_each_input(std::uint32_t id, F&& f) const {
    const auto visit = [&](std::uint32_t at) {
      const auto producers = input_producers(at);
      const auto values = input_values(at);
      for (std::size_t i = 0; i < producers.size(); ++i) {
        if (!parameter_[producers[i]]) f(producers[i], values[i]);
      }
    };
    visit(id);
    for (const std::uint32_t guest : guests(id)) visit(guest);
  }
  // The path `id` folds by, unique, and its label, what a node's unit is called (fold_rules.hpp:
  // fold_paths).
  [[nodiscard]] std::string_view path(std::uint32_t id) const { return paths_[id]; }
  [[nodiscard]] std::string_view label(std::uint32_t id) const { return labels_[id]; }
  // Node ids sorted by path, and the positions [first, second) in it of paths starting with
  // `prefix`.
  [[nodiscard]] std::uint32_t by_path(std::size_t k) const { return by_path_[k]; }
  [[nodiscard]] std::pair<std::size_t, std::size_t> path_range(const std::string& prefix) const;
  // The drawn nodes that read what drawn node `id` (or a guest of it) makes, each once.
  [[nodiscard]] std::span<const std::uint32_t> successors(std::uint32_t id) const {
    return {successors_.data() + successor_begin_[id],
            successor_begin_[id + 1] - successor_begin_[id]};
  }
  // The place of drawn node `id` in a topological order of the drawn nodes (the smallest id
  // first among those ready; nodes on a cycle of a malformed graph last, by id).
  [[nodiscard]] std::uint32_t position(std::uint32_t id) const { return position_[id]; }

 private:
  static constexpr std::uint8_t kGraphInput = 1;   // a graph input (an initializer or not)
  static constexpr std::uint8_t kDrawnInput = 2;   // in inputs_: not an initializer, or outer
  static constexpr std::uint8_t kGraphOutput = 4;  // a graph output
  static constexpr std::uint8_t kOuter = 8;        // read from the graphs around (outer())

  std::uint32_t intern(std::string_view name);
  std::uint32_t op_of(std::string_view type, std::string_view domain);
  void index_keys();
  void index_subgraph_reads(bool nested);
  void index_readers();
  void index_producers();
  void sort_paths();
  void index_order();

  // Nodes.
  std::vector<std::string_view> names_, keys_, modules_;
  std::vector<bool> subgraphs_;
  std::vector<std::uint32_t> op_of_;
  std::vector<std::string> op_names_;
  std::vector<std::string_view> op_types_, op_domains_;
  // Building: ops by qualified name, and (no string made per node) ai.onnx ops by their type.
  std::unordered_map<std::string, std::uint32_t> op_index_;
  std::unordered_map<std::string_view, std::uint32_t> onnx_op_index_;
  std::deque<std::string> made_;  // strings the views above point into: keys, modules, paths
  // Node i's input value ids at node_values_[node_begin_[i] .. node_outputs_at_[i]], its
  // outputs' up to node_begin_[i + 1].
  std::vector<std::uint32_t> node_begin_, node_outputs_at_, node_values_;
  // The names node i's subgraphs read: free_[free_begin_[i] .. free_begin_[i + 1]] (building).
  std::vector<std::uint32_t> free_begin_;
  std::vector<std::string_view> free_;
  // Values.
  NameTable values_;
  std::vector<std::uint32_t> producer_of_, initializer_of_;
  std::vector<std::uint8_t> flags_;
  std::uint32_t initializers_ = 0;
  std::vector<std::uint32_t> reader_begin_, readers_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> subgraph_reads_;
  std::vector<std::string_view> inputs_, outputs_;
  std::vector<std::uint32_t> input_begin_, input_producers_, graph_input_reads_;
  std::vector<std::string_view> input_values_;
  // The folding.
  std::vector<bool> parameter_;
  std::vector<std::uint32_t> host_, guest_begin_, guests_;
  std::vector<std::string_view> paths_, labels_;
  std::vector<std::uint32_t> by_path_, successor_begin_, successors_, position_;
};

}  // namespace onnxmap::cli::viewer
