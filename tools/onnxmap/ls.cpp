// onnxmap ls MODEL: one row per tensor (name, dtype, dims, bytes, where its payload is, path).

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "format.hpp"
#include "onnxmap/onnxmap.hpp"
#include "verbs.hpp"

namespace onnxmap::cli {

namespace {

struct LsArgs {
  std::string model;
  bool json = false;
  bool no_mmap = false;
};

std::string_view storage_name(TensorStorage storage) {
  switch (storage) {
    case TensorStorage::none: return "none";
    case TensorStorage::raw: return "raw";
    case TensorStorage::external: return "external";
    case TensorStorage::typed: return "typed";
  }
  return "?";
}

nlohmann::json tensor_json(const Tensor& t) {
  nlohmann::json row;
  row["name"] = std::string(t.lookup_name());
  row["dtype"] = data_type_name(t.data_type());
  row["dims"] = std::vector<std::int64_t>(t.dims().begin(), t.dims().end());
  row["bytes"] = t.byte_size();
  row["storage"] = std::string(storage_name(t.storage()));
  row["file"] = std::string(t.data_file());
  if (t.storage() != TensorStorage::none) row["offset"] = t.file_offset();
  row["path"] = t.path();
  return row;
}

int run_ls(const LsArgs& args) {
  Options options;
  options.load = args.no_mmap ? LoadMode::read : LoadMode::map;
  const Model model = Model::open(args.model, options);
  if (args.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t i = 0; i < model.tensor_count(); ++i)
      rows.push_back(tensor_json(model.tensor_at(i)));
    std::cout << rows.dump(2) << '\n';
    return kExitOk;
  }
  Table table({"NAME", "DTYPE", "DIMS", "SIZE", "STORAGE", "OFFSET", "PATH"});
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    const Tensor t = model.tensor_at(i);
    std::string where(storage_name(t.storage()));
    if (t.storage() == TensorStorage::external) where += ":" + std::string(t.data_file());
    table.add({std::string(t.lookup_name()), data_type_name(t.data_type()), format_dims(t.dims()),
               human_bytes(t.byte_size()), where,
               t.storage() == TensorStorage::none ? "-" : std::to_string(t.file_offset()),
               t.path()});
  }
  table.print(std::cout);
  return kExitOk;
}

}  // namespace

void add_ls_verb(CLI::App& app) {
  auto args = std::make_shared<LsArgs>();
  CLI::App* sub = app.add_subcommand("ls", "List every tensor: name, dtype, dims, size, where");
  sub->add_option("MODEL", args->model, "the .onnx file")->required();
  sub->add_flag("--json", args->json, "one JSON object per tensor, exact numbers");
  sub->add_flag("--no-mmap", args->no_mmap, "read the file into memory instead of mapping it");
  add_verb(sub, [args] { return run_ls(*args); });
}

}  // namespace onnxmap::cli
