#pragma once
// The viewer's graph (the main graph, or a subgraph of an If, Loop or Scan) as its pages need
// it: the model's views of its nodes, initializers and declared types; the graph the folding
// reads (fold_graph.hpp), built from them once, and its folding (graph_level.hpp: Folding);
// and the JSON of the node pages and the search (node_detail.cpp). Built once, then read by
// any number of threads; the search keeps its last result under a lock.

#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "fold_graph.hpp"
#include "graph_level.hpp"
#include "onnxmap/onnxmap.hpp"

namespace onnxmap::cli::viewer {

class NodeGraph {
 public:
  // The graph `graph` of `model` (none: an empty graph); `nested`: a subgraph (of an If, Loop,
  // Scan), whose nodes may read values of the graphs around it.
  NodeGraph(Model model, std::optional<Graph> graph, bool nested = false);
  NodeGraph(const NodeGraph&) = delete;
  NodeGraph& operator=(const NodeGraph&) = delete;

  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
  [[nodiscard]] const FoldGraph& fold() const noexcept { return fold_; }
  [[nodiscard]] const Folding& folding() const noexcept { return folding_; }
  [[nodiscard]] const Node& node_at(std::uint32_t id) const { return nodes_[id]; }

  // Nodes whose name, op type, input or output contains `text`, case-insensitive (/api/nodes).
  [[nodiscard]] nlohmann::json search(const std::string& text, std::uint64_t offset,
                                      std::uint64_t limit) const;
  // One node, its attributes, subgraphs and neighbourhood (/api/node); the caller checks
  // `id < size()`.
  [[nodiscard]] nlohmann::json node(std::uint32_t id) const;
  // The nodes that read `value`: {"consumers": [...] (at most `limit`), "total"}.
  [[nodiscard]] nlohmann::json consumers(std::string_view value, std::size_t limit) const;

  // The initializer named `value` of this graph, if any.
  [[nodiscard]] std::optional<Tensor> initializer(std::string_view value) const;
  // Whether `value` is read from the graphs around this one.
  [[nodiscard]] bool outer_scope(std::string_view value) const;
  // "FLOAT[batch, 2]" where the graph declares the value's type (inputs, outputs, value_info,
  // initializers), else "".
  [[nodiscard]] std::string value_type(std::string_view value) const;

 private:
  void index(bool nested);
  [[nodiscard]] nlohmann::json node_ref(std::uint32_t id) const;
  [[nodiscard]] nlohmann::json neighbourhood(std::uint32_t id) const;
  [[nodiscard]] nlohmann::json drawing(std::uint32_t id) const;

  Model model_;
  std::optional<Graph> graph_;
  std::vector<Node> nodes_;
  std::vector<Tensor> initializer_list_;
  std::unordered_map<std::string_view, Type> declared_types_;
  FoldGraph fold_;
  Folding folding_{fold_};

  // The last search's matches: the pages of one search do not search again.
  mutable std::mutex search_mutex_;
  mutable std::string last_search_;
  mutable std::shared_ptr<const std::vector<std::uint32_t>> last_matches_;
};

// A repeated string field (a node's inputs) as a JSON array.
[[nodiscard]] nlohmann::json names_json(const Names& names);

}  // namespace onnxmap::cli::viewer
