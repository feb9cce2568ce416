// /api/summary: what `info --stats --json` says, with what the summary page adds.

#include <map>

#include "shared/model_json.hpp"
#include "view_api.hpp"

namespace onnxmap::cli::viewer {

namespace {

std::uint64_t count_nodes(const ViewRange<Node>& nodes);

// The nodes of the graphs a node's attributes hold (If's branches, Loop's and Scan's bodies).
std::uint64_t subgraph_nodes(const Node& node) {
  std::uint64_t n = 0;
  for (const Attribute a : node.attributes()) {
    if (const auto g = a.g()) n += count_nodes(g->nodes());
    for (const Graph g : a.graphs()) n += count_nodes(g.nodes());
  }
  return n;
}

std::uint64_t count_nodes(const ViewRange<Node>& nodes) {
  std::uint64_t n = 0;
  for (const Node node : nodes) n += 1 + subgraph_nodes(node);
  return n;
}

std::string storage_key(const Tensor& t) {
  const std::string storage(to_string(t.storage()));
  return t.storage() == TensorStorage::external ? storage + ":" + std::string(t.data_file())
                                                : storage;
}

}  // namespace

nlohmann::json view_summary(const Model& model, const std::string& source) {
  nlohmann::json out = summary_json(ModelSummary::of(model));
  const nlohmann::json counts = stats_json(model);
  out["source"] = source;
  out["tensors"] = counts["tensors"];
  out["by_dtype"] = counts["by_dtype"];
  out["op_types"] = counts["nodes_by_op_type"];
  std::uint64_t parameters = 0, bytes = 0;
  std::map<std::string, nlohmann::json> by_storage;
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    const Tensor t = model.tensor_at(i);
    parameters += t.element_count();
    bytes += t.byte_size();
    nlohmann::json& entry = by_storage[storage_key(t)];
    if (entry.is_null()) entry = {{"tensors", 0}, {"bytes", 0}};
    entry["tensors"] = entry["tensors"].get<std::uint64_t>() + 1;
    entry["bytes"] = entry["bytes"].get<std::uint64_t>() + t.byte_size();
  }
  out["parameters"] = parameters;
  out["tensor_bytes"] = bytes;
  out["by_storage"] = by_storage;
  const auto graph = model.graph();
  out["nodes"] = graph ? graph->nodes().size() : 0;
  std::uint64_t all_nodes = graph ? count_nodes(graph->nodes()) : 0;
  nlohmann::json functions = nlohmann::json::array();
  for (const Function f : model.functions()) {
    const std::uint64_t n = count_nodes(f.nodes());
    all_nodes += n;
    functions.push_back(
        {{"domain", std::string(f.domain())}, {"name", std::string(f.name())}, {"nodes", n}});
  }
  out["nodes_all"] = all_nodes;
  out["functions"] = std::move(functions);
  return out;
}

nlohmann::json view_warnings(const Model& model) {
  nlohmann::json out = nlohmann::json::array();
  for (const Problem& p : check(model).problems) {
    out.push_back(p.path.empty() ? p.detail : p.path + ": " + p.detail);
  }
  return {{"warnings", std::move(out)}};
}

}  // namespace onnxmap::cli::viewer
