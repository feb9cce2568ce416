// /api/summary: what `info --stats --json` says, with what the summary page adds.

#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>

#include "shared/model_json.hpp"
#include "view_api.hpp"

namespace onnxmap::cli::viewer {

namespace {

std::uint64_t nodes_in_subgraphs(const Node& node);

// The nodes of `nodes` and of the subgraphs they hold, at any depth.
std::uint64_t nodes_with_subgraphs(const ViewRange<Node>& nodes) {
  std::uint64_t n = 0;
  for (const Node node : nodes) n += 1 + nodes_in_subgraphs(node);
  return n;
}

// The nodes of the graphs a node's attributes hold (If's branches, Loop's and Scan's bodies), at
// any depth; not the node itself.
std::uint64_t nodes_in_subgraphs(const Node& node) {
  std::uint64_t n = 0;
  for (const Attribute a : node.attributes()) {
    if (const auto g = a.g()) n += nodes_with_subgraphs(g->nodes());
    for (const Graph g : a.graphs()) n += nodes_with_subgraphs(g.nodes());
  }
  return n;
}

std::string storage_key(const Tensor& t) {
  const std::string storage(to_string(t.storage()));
  return t.storage() == TensorStorage::external ? storage + ":" + std::string(t.data_file())
                                                : storage;
}

// "parameters", "tensor_bytes" and "by_storage" of every tensor.
void add_tensor_totals(const Model& model, nlohmann::json& out) {
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
}

// "nodes" (the main graph's own), "subgraph_nodes" (in the graphs its nodes hold),
// "function_nodes" (in the functions, their subgraphs included) and "functions" with each one's.
void add_node_counts(const Model& model, nlohmann::json& out) {
  const auto graph = model.graph();
  std::uint64_t in_subgraphs = 0;
  if (graph) {
    for (const Node node : graph->nodes()) in_subgraphs += nodes_in_subgraphs(node);
  }
  out["nodes"] = graph ? graph->nodes().size() : 0;
  out["subgraph_nodes"] = in_subgraphs;
  std::uint64_t in_functions = 0;
  nlohmann::json functions = nlohmann::json::array();
  for (const Function f : model.functions()) {
    const std::uint64_t n = nodes_with_subgraphs(f.nodes());
    in_functions += n;
    functions.push_back(
        {{"domain", std::string(f.domain())}, {"name", std::string(f.name())}, {"nodes", n}});
  }
  out["function_nodes"] = in_functions;
  out["functions"] = std::move(functions);
}

// "2026-11-29T03:10:12Z": UTC, to the second.
std::string utc_text(std::time_t seconds) {
  std::tm utc{};
  char text[32];
  const bool ok = ::gmtime_r(&seconds, &utc) != nullptr &&
                  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc) > 0;
  return ok ? text : "";
}

}  // namespace

nlohmann::json view_on_disk(const Model& model, std::chrono::system_clock::time_point opened_at) {
  nlohmann::json changed = nlohmann::json::array();
  for (const std::filesystem::path& file : model.changed_on_disk()) {
    changed.push_back(file.lexically_relative(model.folder()).string());
  }
  const auto version = model.opened_version();
  constexpr std::int64_t kNanoseconds = 1'000'000'000;
  return {{"opened_at", utc_text(std::chrono::system_clock::to_time_t(opened_at))},
          {"file_modified", version ? nlohmann::json(utc_text(static_cast<std::time_t>(
                                          version->modified_ns / kNanoseconds)))
                                    : nlohmann::json()},
          {"changed_on_disk", std::move(changed)}};
}

nlohmann::json view_summary(const Model& model, const std::string& source) {
  nlohmann::json out = summary_json(ModelSummary::of(model));
  const nlohmann::json counts = stats_json(model);
  out["source"] = source;
  out["tensors"] = counts["tensors"];
  out["by_dtype"] = counts["by_dtype"];
  out["op_types"] = counts["nodes_by_op_type"];
  add_tensor_totals(model, out);
  add_node_counts(model, out);
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
