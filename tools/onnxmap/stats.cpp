// onnxmap stats MODEL [NAME...]: each numeric tensor's range, mean, spread, zeros, NaNs,
// infinities and histogram (onnxmap::plan_stats: read with the loader in file order and counted
// on its threads).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "format.hpp"
#include "onnxmap/onnxmap.hpp"
#include "remote_flags.hpp"
#include "shared/model_json.hpp"
#include "verbs.hpp"

namespace onnxmap::cli {

namespace {

struct StatsArgs {
  std::string model;
  std::vector<std::string> names;  // tensors by name; empty: every tensor (or --filter's)
  std::string filter;
  unsigned bins = 32;
  // Reading and counting threads: counting a warm model keeps every core busy.
  unsigned threads = std::max(4U, std::thread::hardware_concurrency());
  bool json = false;
  RemoteOptions remote;
};

std::string stats_cell(const nlohmann::json& row, const char* key) {
  if (!row.contains(key)) return "-";
  const nlohmann::json& v = row[key];
  if (v.is_null()) return "-";
  if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.6g", v.get<double>());
  return text.data();
}

// The table a person reads, from the JSON rows alone.
void print_stats_table(const nlohmann::json& rows) {
  Table table({"NAME", "DTYPE", "COUNT", "MIN", "MAX", "MEAN", "STD", "ZEROS", "NAN", "INF"});
  for (const nlohmann::json& row : rows) {
    table.add({row["name"].get<std::string>(), row["dtype"].get<std::string>(),
               std::to_string(row["count"].get<std::uint64_t>()), stats_cell(row, "min"),
               stats_cell(row, "max"), stats_cell(row, "mean"), stats_cell(row, "std"),
               stats_cell(row, "zeros"), stats_cell(row, "nans"), stats_cell(row, "infinities")});
  }
  table.print(std::cout);
}

int run_stats(const StatsArgs& args) {
  OpenOptions open_options;
  open_options.remote = args.remote;
  const Model model = Model::open(args.model, open_options);
  PlanOptions picked = PlanOptions::matching(args.filter);
  picked.names = args.names;
  const std::vector<LoadItem> plan = onnxmap::plan(model, picked);
  LoadOptions options;
  options.threads = args.threads;
  // Views of the map, nothing copied: the loader fills the page cache with large reads where
  // it must, its threads count the bytes as they land, and each tensor's pages are dropped from
  // this process once counted.
  options.mode = LoadMode::map;
  const std::vector<std::optional<TensorStats>> stats = plan_stats(plan, args.bins, options);
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < plan.size(); ++i) {
    out.push_back(tensor_stats_json(plan[i].tensor, stats[i] ? &*stats[i] : nullptr));
  }
  if (args.json) {
    print_json(std::cout, out);
  } else {
    print_stats_table(out);
  }
  return kExitOk;
}

}  // namespace

void add_stats_verb(CLI::App& app) {
  auto args = std::make_shared<StatsArgs>();
  CLI::App* sub = app.add_subcommand(
      "stats", "Each tensor's min, max, mean, std, zeros, NaNs, infinities and histogram");
  sub->add_option("MODEL", args->model, "the .onnx file or its URL")->required();
  sub->add_option("NAME", args->names, "only these tensors (names or paths as `ls` shows)");
  add_remote_flags(sub, args->remote);
  sub->add_option("--filter", args->filter, "only tensors whose name matches this glob");
  sub->add_option("--bins", args->bins, "histogram bins, in --json (default 32)")
      ->check(CLI::Range(1U, 4096U));
  sub->add_option("--threads", args->threads,
                  "reading and counting threads (default: the cores, at least 4)")
      ->check(CLI::Range(1U, 256U));
  sub->add_flag("--json", args->json,
                "a JSON array, one object per tensor, with its histogram over [min, max]");
  add_verb(sub, [args] { return run_stats(*args); });
}

}  // namespace onnxmap::cli
