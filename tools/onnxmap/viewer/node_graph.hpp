#pragma once
// The viewer's index of one graph (the main graph, or a subgraph of an If, Loop or Scan): who
// produces and who reads each value, which nodes are drawn inside another (weight preparation,
// quantization plumbing) and the name path each node folds by (fold_rules.hpp), the nodes
// sorted by it, the drawn nodes' edges and a topological order. Built once, then read by any
// number of threads; the search keeps its last result under a lock.

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "name_table.hpp"
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
  // Sorts a box's op counts (op, count) for its summary: the computation first (fold_rules.hpp:
  // summary_rank), most common first within a rank.
  void order_summary(std::vector<std::pair<std::uint32_t, std::uint32_t>>& ops) const;
  // The node `id` is drawn as: itself, or the node it is drawn inside (fold_rules.cpp:
  // index_hosts; a parameter inside its first reader (and shown in its other readers too:
  // guests()), an Identity inside its one reader,
  // quantization plumbing inside the node whose output it quantizes).
  [[nodiscard]] std::uint32_t host(std::uint32_t id) const { return host_[id]; }
  [[nodiscard]] bool drawn(std::uint32_t id) const { return host_[id] == id; }
  // The nodes drawn inside `id`, in node order: those whose host() it is (itself excluded),
  // and the shared weight preparation it reads, hosted by another reader (a parameter read by
  // several nodes is shown inside each of them; counted, and navigated to, in its host only).
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
  [[nodiscard]] bool outer_scope(std::string_view value) const;
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
  static constexpr std::uint32_t kNone = NameTable::kNone;
  static constexpr std::size_t kSharedGuests = 64;  // shared preparation shown inside one node
  // Bits of value_flags_.
  static constexpr std::uint8_t kGraphInput = 1;   // a graph input (an initializer or not)
  static constexpr std::uint8_t kDrawnInput = 2;   // in inputs_: not an initializer, or outer
  static constexpr std::uint8_t kGraphOutput = 4;  // a graph output
  static constexpr std::uint8_t kOuter = 8;        // read from the graphs around (outer_scope)

  void index_values();
  void index_nodes();
  void index_keys();
  void index_readers(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& nested_reads);
  void index_producers(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& subgraph_reads);
  void index_hosts();
  void index_guests();
  void index_paths();
  void sort_paths();
  void index_order();
  [[nodiscard]] std::vector<std::pair<std::uint32_t, std::uint32_t>> index_subgraph_reads(
      bool nested);
  // The id of value `name`, interned once; find_value: kNone where the graph never names it.
  std::uint32_t intern(std::string_view name);
  [[nodiscard]] std::uint32_t find_value(std::string_view name) const;
  // The value ids of node `id`'s inputs and outputs, in order (kNone: an omitted one, "").
  [[nodiscard]] std::span<const std::uint32_t> inputs_of(std::uint32_t id) const {
    return {node_values_.data() + node_begin_[id], node_outputs_at_[id] - node_begin_[id]};
  }
  [[nodiscard]] std::span<const std::uint32_t> outputs_of(std::uint32_t id) const {
    return {node_values_.data() + node_outputs_at_[id], node_begin_[id + 1] - node_outputs_at_[id]};
  }
  [[nodiscard]] std::span<const std::uint32_t> readers_of(std::uint32_t value) const {
    return {readers_.data() + reader_begin_[value],
            reader_begin_[value + 1] - reader_begin_[value]};
  }
  [[nodiscard]] nlohmann::json node_ref(std::uint32_t id) const;
  [[nodiscard]] std::shared_ptr<const void> memo_find(const std::string& key) const;
  void memo_keep(const std::string& key, std::shared_ptr<const void> value,
                 std::size_t bytes) const;
  [[nodiscard]] nlohmann::json neighbourhood(std::uint32_t id) const;
  [[nodiscard]] nlohmann::json drawing(std::uint32_t id) const;

  Model model_;
  std::optional<Graph> graph_;
  std::vector<Node> nodes_;
  std::vector<std::string_view> names_;   // each node's name, read once
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
  std::vector<std::string_view> op_types_, op_domains_;      // each op's type and domain
  std::vector<std::uint32_t> op_of_;                         // each node's index in op_names_
  std::vector<std::uint32_t> host_;                          // see host()
  std::vector<std::uint32_t> guest_begin_, guests_;  // guests(i): guests_[guest_begin_[i]...]
  // Every value the graph names (node inputs and outputs, graph inputs, outputs, initializers),
  // interned once: a value id indexes the tables below, and no pass hashes a name again.
  NameTable values_;
  std::vector<std::uint32_t> producer_of_;     // the first node making it, or kNone
  std::vector<std::uint32_t> initializer_of_;  // its index in initializer_list_, or kNone
  std::vector<std::uint8_t> value_flags_;      // kGraphInput | kDrawnInput | ...
  // Its readers: readers_[reader_begin_[v] .. reader_begin_[v + 1]], in node order, a node once
  // per input that reads it, then the nodes whose subgraphs read it (outer scope).
  std::vector<std::uint32_t> reader_begin_, readers_;
  // (value, node), in node order: the values of this graph (and, nested, of the graphs around
  // it) that a node's subgraphs read (index_subgraph_reads).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> subgraph_reads_;
  // Node i's input value ids at node_values_[node_begin_[i] .. node_outputs_at_[i]], its
  // outputs' up to node_begin_[i + 1].
  std::vector<std::uint32_t> node_begin_, node_outputs_at_, node_values_;
  // The producers of each node's inputs and their names: those of node i are at
  // input_begin_[i] .. input_begin_[i + 1] of input_producers_ and input_values_.
  std::vector<std::uint32_t> input_begin_;
  std::vector<std::uint32_t> input_producers_;
  std::vector<std::uint32_t> graph_input_reads_;  // see graph_input_reads()
  std::vector<std::string_view> input_values_;
  std::vector<Tensor> initializer_list_;
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
