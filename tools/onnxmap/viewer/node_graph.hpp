#pragma once
// The viewer's index of one graph (the main graph, or a subgraph of an If, Loop or Scan): who
// produces and who reads each value, which nodes are drawn inside another (weight preparation,
// quantization plumbing) and the name path each node folds by (fold_rules.hpp), the nodes
// sorted by it, the drawn nodes' edges and a topological order. Built once, then read by any
// number of threads; the search keeps its last result under a lock.

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "onnxmap/onnxmap.hpp"

namespace onnxmap::cli::viewer {

class NodeGraph {
 public:
  // The index of `graph` of `model` (none: an empty graph); `nested`: a subgraph (of an If, Loop,
  // Scan), whose nodes may read values of the graphs around it.
  NodeGraph(Model model, std::optional<Graph> graph, bool nested = false);

  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
  // Nodes whose name, op type, input or output contains `text`, case-insensitive (/api/nodes).
  [[nodiscard]] nlohmann::json search(const std::string& text, std::uint64_t offset,
                                      std::uint64_t limit) const;
  // One node, its attributes, subgraphs and neighbourhood (/api/node); the caller checks
  // `id < size()`.
  [[nodiscard]] nlohmann::json node(std::uint32_t id) const;
  // The nodes that read `value`: {"consumers": [...] (at most `limit`), "total"}.
  [[nodiscard]] nlohmann::json consumers(std::string_view value, std::size_t limit) const;

  // For folding and drawing (graph_units.hpp, graph_scene.hpp).
  [[nodiscard]] const Node& node_at(std::uint32_t id) const { return nodes_[id]; }
  // The name, or "OpType#id" when empty or taken by an earlier node.
  [[nodiscard]] std::string_view key(std::uint32_t id) const { return keys_[id]; }
  [[nodiscard]] std::uint32_t op(std::uint32_t id) const { return op_of_[id]; }
  [[nodiscard]] const std::string& op_name(std::uint32_t op) const { return op_names_[op]; }
  // The node `id` is drawn as: itself, or the node it is drawn inside (fold_rules.cpp:
  // index_hosts; a parameter inside its first reader, an Identity inside its one reader,
  // quantization plumbing inside the node whose output it quantizes).
  [[nodiscard]] std::uint32_t host(std::uint32_t id) const { return host_[id]; }
  [[nodiscard]] bool drawn(std::uint32_t id) const { return host_[id] == id; }
  // The nodes drawn inside `id` (those whose host() it is, itself excluded).
  [[nodiscard]] std::span<const std::uint32_t> guests(std::uint32_t id) const {
    return {guests_.data() + guest_begin_[id], guest_begin_[id + 1] - guest_begin_[id]};
  }
  // Whether `id` computes only from initializers and constants (a weight's preparation): it
  // makes no edge (for_each_input passes it over).
  [[nodiscard]] bool parameter(std::uint32_t id) const { return parameter_[id]; }
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
  // How many inputs of `id` (itself, not its guests) are graph inputs.
  [[nodiscard]] std::uint32_t graph_input_reads(std::uint32_t id) const {
    return graph_input_reads_[id];
  }
  // The producer of each input of `id` that a node produces, and that input's name.
  [[nodiscard]] std::span<const std::uint32_t> input_producers(std::uint32_t id) const {
    return {input_producers_.data() + input_begin_[id], input_begin_[id + 1] - input_begin_[id]};
  }
  [[nodiscard]] std::span<const std::string_view> input_values(std::uint32_t id) const {
    return {input_values_.data() + input_begin_[id], input_begin_[id + 1] - input_begin_[id]};
  }
  // The path `id` folds by (fold_rules.cpp: index_paths): its scope, then its label as one
  // segment; unique. The label: what a node's unit is called.
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
  // The graph's inputs that are not initializers, then (in a subgraph) the values its nodes, and
  // the subgraphs of its nodes, read from the graphs around it, in the order first read; its
  // outputs, in order; who reads and makes them (a node whose subgraph reads an outer value
  // reads it).
  [[nodiscard]] const std::vector<std::string_view>& graph_inputs() const { return inputs_; }
  [[nodiscard]] const std::vector<std::string_view>& graph_outputs() const { return outputs_; }
  [[nodiscard]] bool outer_scope(std::string_view value) const { return outer_.contains(value); }
  [[nodiscard]] std::optional<std::uint32_t> producer(std::string_view value) const;
  [[nodiscard]] std::span<const std::uint32_t> readers(std::string_view value) const;
  // The initializer named `value` of this graph, if any.
  [[nodiscard]] std::optional<Tensor> initializer(std::string_view value) const;
  // A value computed once per `key` and kept: the folding's units and levels (graph_level.cpp),
  // the most recently used first, at most 32 of them and about 256 MiB by memo_bytes(value)
  // (an overload for T found by argument-dependent lookup). `make` runs outside the lock; two
  // threads asking at once may both make it, and one is kept.
  template <typename T, typename F>
  [[nodiscard]] std::shared_ptr<const T> memo(const std::string& key, F&& make) const {
    if (auto found = memo_find(key)) return std::static_pointer_cast<const T>(found);
    auto made = std::make_shared<const T>(make());
    memo_keep(key, made, memo_bytes(*made));
    return made;
  }

  // "FLOAT[batch, 2]" where the graph declares the value's type (inputs, outputs, value_info,
  // initializers), else "".
  [[nodiscard]] std::string value_type(std::string_view value) const;

 private:
  void index_nodes();
  void index_producers();
  void index_hosts();
  void index_guests();
  void index_paths();
  void sort_paths();
  void index_order();
  void index_values();
  void index_outer_scope();
  [[nodiscard]] nlohmann::json node_ref(std::uint32_t id) const;
  [[nodiscard]] std::shared_ptr<const void> memo_find(const std::string& key) const;
  void memo_keep(const std::string& key, std::shared_ptr<const void> value,
                 std::size_t bytes) const;
  [[nodiscard]] nlohmann::json neighbourhood(std::uint32_t id) const;

  Model model_;
  std::optional<Graph> graph_;
  std::vector<Node> nodes_;
  std::vector<std::string_view> keys_;    // the name, or "OpType#id" when empty or taken
  std::deque<std::string> made_keys_;     // the "OpType#id" keys keys_ points into
  std::vector<std::string_view> paths_;   // see path(): a name, or one of made_paths_
  std::deque<std::string> made_paths_;    // the paths that are not a node's name
  std::vector<std::string_view> labels_;  // see label()
  std::vector<std::uint32_t> by_path_;    // node ids sorted by path
  std::vector<bool> parameter_;           // see parameter()
  std::vector<std::uint32_t> successor_begin_, successors_;  // see successors()
  std::vector<std::uint32_t> position_;                      // see position()
  std::vector<std::string> op_names_;                        // "MatMul", "com.microsoft.Attention"
  std::vector<std::uint32_t> op_of_;                         // each node's index in op_names_
  std::vector<std::uint32_t> host_;                          // see host()
  std::vector<std::uint32_t> guest_begin_, guests_;  // guests(i): guests_[guest_begin_[i]...]
  std::unordered_map<std::string_view, std::uint32_t> producer_;
  // Most values have one or two readers: kept in place, not one allocation per value.
  std::unordered_map<std::string_view, boost::container::small_vector<std::uint32_t, 2>> consumers_;
  // The producers of each node's inputs and their names: those of node i are at
  // input_begin_[i] .. input_begin_[i + 1] of input_producers_ and input_values_.
  std::vector<std::uint32_t> input_begin_;
  std::vector<std::uint32_t> input_producers_;
  std::vector<std::uint32_t> graph_input_reads_;  // see graph_input_reads()
  std::vector<std::string_view> input_values_;
  std::unordered_map<std::string_view, std::uint32_t> initializers_;  // index in initializer_list_
  std::vector<Tensor> initializer_list_;
  std::unordered_set<std::string_view> graph_input_set_, graph_output_set_, outer_;
  std::vector<std::string_view> inputs_, outputs_;
  std::unordered_map<std::string_view, Type> declared_types_;

  mutable std::mutex memo_mutex_;
  struct MemoEntry {
    std::string key;
    std::shared_ptr<const void> value;
    std::size_t bytes = 0;
  };
  mutable std::deque<MemoEntry> memo_;  // the most recently used last
  mutable std::size_t memo_bytes_ = 0;

  // The last search's matches: the pages of one search do not search again.
  mutable std::mutex search_mutex_;
  mutable std::string last_search_;
  mutable std::shared_ptr<const std::vector<std::uint32_t>> last_matches_;
};

// A repeated string field (a node's inputs) as a JSON array.
[[nodiscard]] nlohmann::json names_json(const Names& names);

}  // namespace onnxmap::cli::viewer
