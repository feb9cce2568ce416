// onnxmap info MODEL: the quick peek (no tensor index); --stats adds counts from the full index.

#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "format.hpp"
#include "load_mode_option.hpp"
#include "onnxmap/onnxmap.hpp"
#include "remote_flags.hpp"
#include "verbs.hpp"

namespace onnxmap::cli {

namespace {

struct InfoArgs {
  std::string model;
  bool json = false;
  bool stats = false;
  LoadModeOption load;
  RemoteOptions remote;
};

std::string ir_text(std::int64_t ir) {
  const auto release = onnx_release_for_ir(ir);
  return std::to_string(ir) + (release ? " (ONNX " + std::string(*release) + ")" : "");
}

nlohmann::json values_json(const ViewRange<ValueInfo>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (const ValueInfo v : values) {
    out.push_back({{"name", std::string(v.name())}, {"type", v.type().to_string()}});
  }
  return out;
}

nlohmann::json summary_json(const ModelSummary& s) {
  nlohmann::json out;
  out["ir_version"] = s.ir_version();
  if (const auto release = onnx_release_for_ir(s.ir_version())) out["onnx_release"] = *release;
  out["opset_import"] = nlohmann::json::object();
  for (const OperatorSetId& o : s.opset_imports()) {
    out["opset_import"][o.domain.empty() ? "ai.onnx" : std::string(o.domain)] = o.version;
  }
  out["producer_name"] = std::string(s.producer_name());
  out["producer_version"] = std::string(s.producer_version());
  out["domain"] = std::string(s.domain());
  out["model_version"] = s.model_version().to_string();
  out["doc_string"] = std::string(s.doc_string());
  out["metadata_props"] = nlohmann::json::object();
  for (const StringStringEntry& e : s.metadata_props()) {
    out["metadata_props"][std::string(e.key)] = std::string(e.value);
  }
  out["graph"] = std::string(s.graph_name());
  out["inputs"] = values_json(s.inputs());
  out["outputs"] = values_json(s.outputs());
  out["file_size"] = s.file_size();
  return out;
}

// Counts over the full index: the main graph's nodes by op type, every tensor and its bytes by
// dtype, external files.
nlohmann::json stats_json(const Model& model) {
  nlohmann::json out;
  std::map<std::string, std::uint64_t> ops;
  if (const auto graph = model.graph()) {
    for (const Node node : graph->nodes()) {
      std::string op(node.op_type());
      if (!node.domain().empty()) op = std::string(node.domain()) + "." + op;
      ++ops[op];
    }
  }
  out["nodes_by_op_type"] = ops;
  std::map<std::string, nlohmann::json> by_dtype;
  std::map<std::string, std::uint64_t> files;
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    const Tensor t = model.tensor_at(i);
    auto& entry = by_dtype[to_string(t.data_type())];
    if (entry.is_null()) entry = {{"tensors", 0}, {"elements", 0}, {"bytes", 0}};
    entry["tensors"] = entry["tensors"].get<std::uint64_t>() + 1;
    entry["elements"] = entry["elements"].get<std::uint64_t>() + t.element_count();
    entry["bytes"] = entry["bytes"].get<std::uint64_t>() + t.byte_size();
    if (t.storage() == TensorStorage::external) files[std::string(t.data_file())] += t.byte_size();
  }
  out["tensors"] = model.tensor_count();
  out["by_dtype"] = by_dtype;
  out["external_files"] = files;
  return out;
}

// "title:" then its rows indented, aligned in columns; "title: (none)" without rows.
void print_section(const std::string& title, const Table& rows, bool empty) {
  std::cout << title << ":" << (empty ? " (none)" : "") << '\n';
  rows.print(std::cout, 2);
}

void print_stats_text(const nlohmann::json& stats) {
  Table ops;
  for (const auto& [op, count] : stats["nodes_by_op_type"].items()) {
    ops.add({op, std::to_string(count.get<std::uint64_t>())});
  }
  print_section("nodes by op type (main graph)", ops, stats["nodes_by_op_type"].empty());
  Table dtypes;
  for (const auto& [dtype, entry] : stats["by_dtype"].items()) {
    dtypes.add({dtype, std::to_string(entry["tensors"].get<std::uint64_t>()) + " tensors",
                std::to_string(entry["elements"].get<std::uint64_t>()) + " elements",
                human_bytes(entry["bytes"].get<std::uint64_t>())});
  }
  print_section("tensors (" + std::to_string(stats["tensors"].get<std::uint64_t>()) + ")", dtypes,
                stats["by_dtype"].empty());
  Table files;
  for (const auto& [file, bytes] : stats["external_files"].items()) {
    files.add({file, human_bytes(bytes.get<std::uint64_t>())});
  }
  if (!stats["external_files"].empty()) print_section("external data files", files, false);
}

void print_info_text(const nlohmann::json& info) {
  std::cout << labelled("ir_version", ir_text(info["ir_version"].get<std::int64_t>()));
  std::string opsets;
  for (const auto& [domain, version] : info["opset_import"].items()) {
    opsets +=
        (opsets.empty() ? "" : ", ") + domain + " " + std::to_string(version.get<std::int64_t>());
  }
  std::cout << labelled("opset_import", opsets.empty() ? "(none)" : opsets);
  for (const char* key :
       {"producer_name", "producer_version", "domain", "model_version", "doc_string", "graph"}) {
    const std::string value = info[key].get<std::string>();
    const bool absent = value.empty() || (std::string_view(key) == "model_version" && value == "0");
    if (!absent) std::cout << labelled(key, first_line(value));
  }
  for (const auto& [key, value] : info["metadata_props"].items()) {
    std::cout << labelled("metadata",
                          first_line(key) + " = " + first_line(value.get<std::string>()));
  }
  std::cout << labelled("file size", human_bytes(info["file_size"].get<std::uint64_t>()));
  for (const char* side : {"inputs", "outputs"}) {
    Table values;
    for (const auto& v : info[side]) {
      values.add({v["name"].get<std::string>(), v["type"].get<std::string>()});
    }
    print_section(side, values, info[side].empty());
  }
  if (info.contains("stats")) print_stats_text(info["stats"]);
}

int run_info(const InfoArgs& args) {
  OpenOptions options;
  options.mode = args.load.mode();
  options.remote = args.remote;
  // With --stats the model is opened once, in full: "-" (standard input) can be read only once.
  std::optional<Model> full;
  if (args.stats) full = Model::open(args.model, options);
  nlohmann::json info = summary_json(full ? ModelSummary::of(*full) : peek(args.model, options));
  if (full) info["stats"] = stats_json(*full);
  if (args.json) {
    print_json(std::cout, info);
  } else {
    print_info_text(info);
  }
  return kExitOk;
}

}  // namespace

void add_info_verb(CLI::App& app) {
  auto args = std::make_shared<InfoArgs>();
  CLI::App* sub = app.add_subcommand("info", "The model's metadata, inputs and outputs (a peek)");
  sub->add_option("MODEL", args->model, "the .onnx file (- = standard input)")->required();
  add_remote_flags(sub, args->remote);
  sub->add_flag("--json", args->json, "print JSON");
  sub->add_flag("--stats", args->stats, "also count nodes and tensors (reads the whole index)");
  add_load_mode_option(sub, args->load);
  add_verb(sub, [args] { return run_info(*args); });
}

}  // namespace onnxmap::cli
