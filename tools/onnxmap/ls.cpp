// onnxmap ls MODEL: one row per tensor (name, the module reading it where nodes say one, dtype,
// dims, bytes, where its payload is, path), optionally filtered by a glob on the name and sorted
// by name, size, offset or module.

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "format.hpp"
#include "load_mode_option.hpp"
#include "onnxmap/onnxmap.hpp"
#include "remote_flags.hpp"
#include "shared/model_json.hpp"
#include "shared/tensor_order.hpp"
#include "shared/value_text.hpp"
#include "verbs.hpp"

namespace onnxmap::cli {

namespace {

struct LsArgs {
  std::string model;
  bool json = false;
  LoadModeOption load;
  RemoteOptions remote;
  std::string sort;    // "", "name", "size", "offset" or "module"
  std::string filter;  // a glob on the name; "" keeps every tensor
};

// The tensors `args` select, in the order they ask for; every sort is stable, so ties keep the
// model's breadth-first order.
std::vector<Tensor> selected(const Model& model, const LsArgs& args, const FirstReaders& readers) {
  std::vector<Tensor> out;
  for (const LoadItem& item : plan(model, PlanOptions::matching(args.filter)))
    out.push_back(item.tensor);
  if (args.sort == "module") {
    std::stable_sort(out.begin(), out.end(), [&](const Tensor& a, const Tensor& b) {
      return readers.position(a) < readers.position(b);
    });
  } else if (args.sort == "name") {
    std::stable_sort(out.begin(), out.end(), [](const Tensor& a, const Tensor& b) {
      return a.lookup_name() < b.lookup_name();
    });
  } else if (args.sort == "size") {
    // Largest first, as `ls -S` does: the question is usually where the bytes are.
    std::stable_sort(out.begin(), out.end(), [](const Tensor& a, const Tensor& b) {
      return a.byte_size() > b.byte_size();
    });
  } else if (args.sort == "offset") {
    std::stable_sort(out.begin(), out.end(), [](const Tensor& a, const Tensor& b) {
      return file_order(a) < file_order(b);
    });
  }
  return out;
}

// The table a person reads, made from the JSON rows alone.
// The MODULE column, where some row says one (ls of a model whose nodes name modules).
void print_table(const nlohmann::json& rows) {
  const bool modules = std::any_of(
      rows.begin(), rows.end(), [](const nlohmann::json& row) { return row.contains("module"); });
  std::vector<std::string> header{"NAME", "DTYPE", "DIMS", "SIZE", "STORAGE", "OFFSET", "PATH"};
  if (modules) header.insert(header.begin() + 1, "MODULE");
  Table table(header);
  for (const nlohmann::json& row : rows) {
    std::string where = row["storage"].get<std::string>();
    if (where == to_string(TensorStorage::external)) where += ":" + row["file"].get<std::string>();
    const auto dims = row["dims"].get<std::vector<std::int64_t>>();
    std::vector<std::string> cells{
        row["name"].get<std::string>(),
        row["dtype"].get<std::string>(),
        dims_text(dims),
        human_bytes(row["bytes"].get<std::uint64_t>()),
        where,
        row.contains("offset") ? std::to_string(row["offset"].get<std::uint64_t>()) : "-",
        row["path"].get<std::string>()};
    if (modules) cells.insert(cells.begin() + 1, row.value("module", "-"));
    table.add(cells);
  }
  table.print(std::cout);
}

int run_ls(const LsArgs& args) {
  OpenOptions options;
  options.mode = args.load.mode();
  options.remote = args.remote;
  const Model model = Model::open(args.model, options);
  const FirstReaders readers(model);
  nlohmann::json rows = nlohmann::json::array();
  for (const Tensor& t : selected(model, args, readers)) {
    rows.push_back(tensor_json(t));
    rows.back().update(readers.json(t));
  }
  if (args.json) {
    print_json(std::cout, rows);
  } else {
    print_table(rows);
  }
  return kExitOk;
}

}  // namespace

void add_ls_verb(CLI::App& app) {
  auto args = std::make_shared<LsArgs>();
  CLI::App* sub = app.add_subcommand("ls", "List every tensor: name, dtype, dims, size, where");
  sub->add_option("MODEL", args->model, "the .onnx file (- = standard input)")->required();
  add_remote_flags(sub, args->remote);
  sub->add_flag("--json", args->json, "a JSON array, one object per tensor, exact numbers");
  add_load_mode_option(sub, args->load);
  sub->add_option("--sort", args->sort,
                  "order rows by name, by size (largest first), by offset (file by file) or by "
                  "module (layer by layer: by the first node reading each)")
      ->check(CLI::IsMember({"name", "size", "offset", "module"}));
  sub->add_option("--filter", args->filter,
                  "only names matching this glob (fnmatch: *, ?, [abc]), e.g. '*.weight'");
  add_verb(sub, [args] { return run_ls(*args); });
}

}  // namespace onnxmap::cli
