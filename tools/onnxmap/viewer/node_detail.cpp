// NodeGraph's page of one node: its fields, attributes and subgraphs, and the nodes around it.

#include <algorithm>
#include <deque>

#include "node_graph.hpp"
#include "shared/value_text.hpp"

namespace onnxmap::cli::viewer {

namespace {

constexpr std::uint32_t kNone = FoldGraph::kNone;
constexpr std::size_t kNeighbourhoodNodes = 200;
constexpr int kHops = 2;
constexpr std::size_t kSubgraphOpsShown = 200;

nlohmann::json subgraph_json(std::string_view attribute, const Graph& graph) {
  nlohmann::json ops = nlohmann::json::array();
  std::size_t count = 0;
  for (const Node n : graph.nodes()) {
    if (count++ < kSubgraphOpsShown) {
      ops.push_back({{"name", std::string(n.name())},
                     {"op_type", std::string(n.op_type())},
                     {"inputs", names_json(n.inputs())},
                     {"outputs", names_json(n.outputs())}});
    }
  }
  return {{"attribute", attribute},
          {"name", std::string(graph.name())},
          {"nodes", count},
          {"ops", std::move(ops)}};
}

}  // namespace

nlohmann::json NodeGraph::node(std::uint32_t id) const {
  const Node& n = nodes_[id];
  nlohmann::json attributes = nlohmann::json::array();
  nlohmann::json subgraphs = nlohmann::json::array();
  for (const Attribute a : n.attributes()) {
    attributes.push_back({{"name", std::string(a.name())},
                          {"type", std::string(to_string(a.type()))},
                          {"value", attribute_value_text(a)}});
    if (const auto g = a.g()) subgraphs.push_back(subgraph_json(a.name(), *g));
    for (const Graph g : a.graphs()) {
      subgraphs.push_back(subgraph_json(a.name(), g));
      subgraphs.back()["many"] = true;  // one of a GRAPHS attribute's: the page names it by index
    }
  }
  nlohmann::json out_node = node_ref(id);
  out_node["domain"] = std::string(n.domain());
  out_node["doc_string"] = std::string(n.doc_string());
  out_node["inputs"] = names_json(n.inputs());
  nlohmann::json branch_reads = nlohmann::json::array();
  const auto& reads = fold_.subgraph_reads();
  const auto first = std::lower_bound(reads.begin(), reads.end(), id,
                                      [](const auto& read, auto at) { return read.second < at; });
  for (auto at = first; at != reads.end() && at->second == id; ++at) {
    branch_reads.push_back(std::string(fold_.value_name(at->first)));
  }
  out_node["branch_reads"] = std::move(branch_reads);
  out_node["outputs"] = names_json(n.outputs());
  out_node["attributes"] = std::move(attributes);
  out_node["subgraphs"] = std::move(subgraphs);
  nlohmann::json tensors = nlohmann::json::array();
  nlohmann::json graph_inputs = nlohmann::json::array();
  for (const std::uint32_t v : fold_.inputs_of(id)) {
    if (v == kNone) continue;
    if (fold_.initializer_of(v) != kNone) tensors.push_back(std::string(fold_.value_name(v)));
    if (fold_.graph_input(v)) graph_inputs.push_back(std::string(fold_.value_name(v)));
  }
  nlohmann::json graph_outputs = nlohmann::json::array();
  for (const std::uint32_t v : fold_.outputs_of(id)) {
    if (v != kNone && fold_.graph_output(v))
      graph_outputs.push_back(std::string(fold_.value_name(v)));
  }
  return {{"node", std::move(out_node)},
          {"drawing", drawing(id)},
          {"tensors", std::move(tensors)},
          {"neighbourhood", neighbourhood(id)},
          {"graph_inputs", std::move(graph_inputs)},
          {"graph_outputs", std::move(graph_outputs)}};
}

// Where `id` is drawn on the graph page: inside which node ("in": null where it is a box of its
// own), which other nodes show it (a weight preparation several nodes read), and what is drawn
// inside it, each guest marked "shared" where another node hosts it.
nlohmann::json NodeGraph::drawing(std::uint32_t id) const {
  nlohmann::json in = fold_.drawn(id) ? nlohmann::json() : node_ref(fold_.host(id));
  nlohmann::json also = nlohmann::json::array();
  if (fold_.parameter(id) && !fold_.drawn(id)) {
    for (std::uint32_t reader = 0; reader < nodes_.size(); ++reader) {
      const auto inside = fold_.guests(reader);
      if (reader != fold_.host(id) && std::binary_search(inside.begin(), inside.end(), id)) {
        also.push_back(node_ref(reader));
      }
    }
  }
  nlohmann::json guests_json = nlohmann::json::array();
  for (const std::uint32_t guest : fold_.guests(id)) {
    nlohmann::json ref = node_ref(guest);
    ref["shared"] = fold_.host(guest) != id;
    guests_json.push_back(std::move(ref));
  }
  return {{"in", std::move(in)}, {"also_in", std::move(also)}, {"inside", std::move(guests_json)}};
}

// The nodes `kHops` steps upstream (producers of inputs, negative distances) and downstream
// (readers of outputs), breadth first, at most kNeighbourhoodNodes; the values between them.
nlohmann::json NodeGraph::neighbourhood(std::uint32_t id) const {
  std::unordered_map<std::uint32_t, int> distance{{id, 0}};
  std::deque<std::uint32_t> queue{id};
  while (!queue.empty() && distance.size() < kNeighbourhoodNodes) {
    const std::uint32_t at = queue.front();
    queue.pop_front();
    const int d = distance[at];
    const auto visit = [&](std::uint32_t next, int next_distance) {
      if (distance.size() < kNeighbourhoodNodes && distance.emplace(next, next_distance).second) {
        queue.push_back(next);
      }
    };
    if (d <= 0 && d > -kHops) {
      for (const std::uint32_t v : fold_.inputs_of(at)) {
        if (v != kNone && fold_.producer_of(v) != kNone) visit(fold_.producer_of(v), d - 1);
      }
    }
    if (d >= 0 && d < kHops) {
      for (const std::uint32_t v : fold_.outputs_of(at)) {
        if (v == kNone) continue;
        for (const std::uint32_t reader : fold_.readers_of(v)) visit(reader, d + 1);
      }
    }
  }
  nlohmann::json nodes = nlohmann::json::array();
  nlohmann::json edges = nlohmann::json::array();
  std::vector<std::uint32_t> ids;
  for (const auto& [node_id, d] : distance) ids.push_back(node_id);
  std::sort(ids.begin(), ids.end());
  for (const std::uint32_t node_id : ids) {
    nlohmann::json ref = node_ref(node_id);
    ref["distance"] = distance[node_id];
    nodes.push_back(std::move(ref));
    for (const std::uint32_t v : fold_.inputs_of(node_id)) {
      const std::uint32_t p = v == kNone ? kNone : fold_.producer_of(v);
      if (p != kNone && distance.contains(p)) {
        edges.push_back(
            {{"from", p}, {"to", node_id}, {"tensor", std::string(fold_.value_name(v))}});
      }
    }
  }
  return {{"nodes", std::move(nodes)}, {"edges", std::move(edges)}};
}

}  // namespace onnxmap::cli::viewer
