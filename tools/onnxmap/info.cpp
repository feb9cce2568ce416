// onnxmap info MODEL: the quick peek (no tensor index); --stats adds counts from the full index.

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "format.hpp"
#include "load_mode_option.hpp"
#include "onnxmap/onnxmap.hpp"
#include "remote_flags.hpp"
#include "shared/model_json.hpp"
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

// ONNX Runtime GenAI's genai_config.json beside a local model (its builder writes one): what it
// says of the model, or why it could not be read; null without one.
nlohmann::json genai_config(const std::string& model) {
  if (model == "-" || is_url(model)) return nullptr;
  const std::filesystem::path path =
      std::filesystem::path(model).parent_path() / "genai_config.json";
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return nullptr;
  nlohmann::json out = {{"file", path.filename().string()}};
  std::ifstream in(path);
  const nlohmann::json config = nlohmann::json::parse(in, nullptr, false);
  const nlohmann::json* m = config.is_object() ? &config : nullptr;
  if (m != nullptr && m->contains("model") && (*m)["model"].is_object()) m = &(*m)["model"];
  if (m == nullptr || m == &config) {
    out["error"] = "not a GenAI configuration (no \"model\" object)";
    return out;
  }
  const auto copy = [&](const nlohmann::json& from, const char* key, const char* as) {
    if (from.contains(key) && (from[key].is_string() || from[key].is_number_integer())) {
      out[as] = from[key];
    }
  };
  copy(*m, "type", "type");
  copy(*m, "context_length", "context_length");
  if (m->contains("decoder") && (*m)["decoder"].is_object()) {
    copy((*m)["decoder"], "filename", "decoder");
    copy((*m)["decoder"], "num_hidden_layers", "layers");
  }
  return out;
}

std::string genai_text(const nlohmann::json& config) {
  std::string out = config["file"].get<std::string>() + " beside it";
  if (config.contains("error")) return out + " (" + config["error"].get<std::string>() + ")";
  std::string said;
  const auto add = [&](const std::string& part) { said += (said.empty() ? "" : ", ") + part; };
  const auto text = [&](const char* key) {
    const nlohmann::json& v = config[key];
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  add("ONNX Runtime GenAI");
  if (config.contains("type")) add("model type " + text("type"));
  if (config.contains("layers")) add(text("layers") + " layers");
  if (config.contains("context_length")) add("context " + text("context_length"));
  if (config.contains("decoder")) add("decoder " + text("decoder"));
  return out + " (" + said + ")";
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
  if (info.contains("genai_config")) {
    std::cout << labelled("genai_config", genai_text(info["genai_config"]));
  }
  if (info.contains("stats")) print_stats_text(info["stats"]);
  // By URL: the retries a flaky server cost, when there were any.
  if (info.contains("fetch") && info["fetch"]["retries"].get<std::uint64_t>() > 0) {
    std::array<char, 64> retries{};
    std::snprintf(retries.data(), retries.size(), "%llu of %llu requests (%.1f s waited)",
                  static_cast<unsigned long long>(info["fetch"]["retries"].get<std::uint64_t>()),
                  static_cast<unsigned long long>(info["fetch"]["requests"].get<std::uint64_t>()),
                  static_cast<double>(info["fetch"]["retry_wait_ms"].get<std::uint64_t>()) / 1000);
    std::cout << labelled("retried", retries.data());
  }
}

int run_info(const InfoArgs& args) {
  OpenOptions options;
  options.mode = args.load.mode();
  options.remote = args.remote;
  // With --stats the model is opened once, in full: "-" (standard input) can be read only once.
  std::optional<Model> full;
  if (args.stats) full = Model::open(args.model, options);
  const ModelSummary summary = full ? ModelSummary::of(*full) : peek(args.model, options);
  nlohmann::json info = summary_json(summary);
  if (full) info["stats"] = stats_json(*full);
  if (nlohmann::json config = genai_config(args.model); !config.is_null()) {
    info["genai_config"] = std::move(config);
  }
  if (const auto fetched = summary.fetch_stats()) {
    info["fetch"] = {{"requests", fetched->requests},
                     {"retries", fetched->retries},
                     {"retry_wait_ms", fetched->retry_wait_ms}};
  }
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
