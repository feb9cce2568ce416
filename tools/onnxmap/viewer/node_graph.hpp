#pragma once
// The viewer's index of the main graph: who produces and who reads each value, the nodes sorted
// by name for folding, so that a graph of 360,000 nodes is drawn a level at a time:
// `model.layers.17.mlp.*` is one box until it is unfolded. Built once (one walk of the nodes),
// then read by any number of threads; the search keeps its last result under a lock.

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "onnxmap/onnxmap.hpp"

namespace onnxmap::cli::viewer {

class NodeGraph {
 public:
  explicit NodeGraph(Model model);

  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
  // The children of `prefix` (api.md, /api/fold). A prefix with a single group as its child is
  // passed through to that child's children, so a chain of one-child levels costs no clicks.
  [[nodiscard]] nlohmann::json fold(std::string prefix, std::uint64_t offset,
                                    std::uint64_t limit) const;
  // Nodes whose name, op type, input or output contains `text`, case-insensitive (/api/nodes).
  [[nodiscard]] nlohmann::json search(const std::string& text, std::uint64_t offset,
                                      std::uint64_t limit) const;
  // One node, its attributes, subgraphs and neighbourhood (/api/node); nullopt-free: the
  // caller checks `id < size()`.
  [[nodiscard]] nlohmann::json node(std::uint32_t id) const;
  // The main-graph nodes that read `value`: {"consumers": [...] (at most `limit`), "total"}.
  [[nodiscard]] nlohmann::json consumers(std::string_view value, std::size_t limit) const;

 private:
  void index_nodes();
  void index_producers();
  [[nodiscard]] nlohmann::json node_ref(std::uint32_t id) const;
  [[nodiscard]] nlohmann::json neighbourhood(std::uint32_t id) const;
  [[nodiscard]] nlohmann::json fold_edges(std::size_t lo, std::size_t hi,
                                          const std::vector<std::uint32_t>& group_at,
                                          const std::vector<std::int32_t>& place_of_group,
                                          std::int32_t first_on_page) const;
  // The ids of the nodes whose key starts with `prefix`, in key order.
  [[nodiscard]] std::pair<std::size_t, std::size_t> key_range(const std::string& prefix) const;

  Model model_;
  std::vector<Node> nodes_;
  std::vector<std::string_view> keys_;  // the name, or "OpType#id" when empty or taken
  std::deque<std::string> made_keys_;   // the "OpType#id" keys keys_ points into
  std::vector<std::uint32_t> by_key_;   // node ids sorted by key
  std::vector<std::string> op_names_;   // "MatMul", "com.microsoft.Attention"
  std::vector<std::uint32_t> op_of_;    // each node's index in op_names_
  std::unordered_map<std::string_view, std::uint32_t> producer_;
  std::unordered_map<std::string_view, std::vector<std::uint32_t>> consumers_;
  // The producers of each node's inputs: those of node i are
  // input_producers_[input_begin_[i] .. input_begin_[i + 1]).
  std::vector<std::uint32_t> input_begin_;
  std::vector<std::uint32_t> input_producers_;
  std::unordered_set<std::string_view> initializers_, graph_inputs_, graph_outputs_;

  // The last search's matches: the pages of one search do not search again.
  mutable std::mutex search_mutex_;
  mutable std::string last_search_;
  mutable std::shared_ptr<const std::vector<std::uint32_t>> last_matches_;
};

// A repeated string field (a node's inputs) as a JSON array.
[[nodiscard]] nlohmann::json names_json(const Names& names);

}  // namespace onnxmap::cli::viewer
