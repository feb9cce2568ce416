// onnxmap stats MODEL [NAME...]: each numeric tensor's range, mean, spread, zeros, NaNs,
// infinities and histogram (onnxmap::tensor_stats), read with the loader in file order.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "format.hpp"
#include "onnxmap/onnxmap.hpp"
#include "remote_flags.hpp"
#include "shared/model_json.hpp"
#include "verbs.hpp"
#include "work_queue.hpp"

namespace onnxmap::cli {

namespace {

struct StatsArgs {
  std::string model;
  std::vector<std::string> names;  // tensors by name; empty: every tensor (or --filter's)
  std::string filter;
  unsigned bins = 32;
  unsigned threads = 4;
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
  std::vector<nlohmann::json> rows(plan.size());
  LoadOptions options;
  options.threads = args.threads;
  // The loader fills the page cache with large reads and hands out views of the map: nothing is
  // copied, and a view stays valid while the model lives, so counting can run on every core:
  // the queue's workers count each tensor, then drop its pages from this process.
  options.mode = LoadMode::map;
  options.release_after_callback = false;
  WorkQueue counting(std::max(1U, std::thread::hardware_concurrency()),
                     options.max_in_flight_bytes);
  const auto count = [&](std::size_t item, std::span<const std::byte> bytes) {
    const Tensor& t = plan[item].tensor;
    if (!has_stats(t.data_type())) {
      rows[item] = tensor_stats_json(t, nullptr);
      return;
    }
    const TensorStats s = tensor_stats(bytes, t.data_type(), t.element_count(), args.bins);
    rows[item] = tensor_stats_json(t, &s);
  };
  (void)load(
      plan,
      [&](const LoadedTensor& loaded) {
        const Tensor& t = plan[loaded.item].tensor;
        // Decoded typed fields live only during the callback: counted here.
        if (!t.has_stored_bytes()) {
          return count(loaded.item, loaded.bytes);
        }
        counting.submit(
            [&count, &t, loaded] {
              count(loaded.item, loaded.bytes);
              t.release();
            },
            loaded.bytes.size());
      },
      options);
  counting.finish();
  const nlohmann::json out(rows);
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
  sub->add_option("--threads", args->threads, "reading threads (default 4)")
      ->check(CLI::Range(1U, 256U));
  sub->add_flag("--json", args->json,
                "a JSON array, one object per tensor, with its histogram over [min, max]");
  add_verb(sub, [args] { return run_stats(*args); });
}

}  // namespace onnxmap::cli
