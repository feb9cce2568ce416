#include "model_json.hpp"

#include <map>
#include <string>
#include <vector>

#include "json_number.hpp"
#include "value_text.hpp"

namespace onnxmap::cli {

namespace {

nlohmann::json values_json(const ViewRange<ValueInfo>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (const ValueInfo v : values) {
    out.push_back({{"name", std::string(v.name())}, {"type", v.type().to_string()}});
  }
  return out;
}

}  // namespace

nlohmann::json summary_json(const ModelSummary& s) {
  nlohmann::json out;
  out["ir_version"] = s.ir_version();
  if (const auto release = onnx_release_for_ir(s.ir_version())) out["onnx_release"] = *release;
  out["opset_import"] = nlohmann::json::object();
  for (const OperatorSetId& o : s.opset_imports()) {
    out["opset_import"][std::string(domain_name(o.domain))] = o.version;
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

nlohmann::json tensor_json(const Tensor& t) {
  nlohmann::json row;
  row["name"] = std::string(t.lookup_name());
  row["dtype"] = to_string(t.data_type());
  row["dims"] = std::vector<std::int64_t>(t.dims().begin(), t.dims().end());
  row["bytes"] = t.byte_size();
  row["storage"] = std::string(to_string(t.storage()));
  row["file"] = std::string(t.data_file());
  if (has_elements(t)) row["offset"] = t.file_offset();
  row["path"] = t.path();
  return row;
}

nlohmann::json tensor_stats_json(const Tensor& t, const TensorStats* s) {
  nlohmann::json row;
  row["name"] = std::string(t.lookup_name());
  row["dtype"] = to_string(t.data_type());
  row["count"] = t.element_count();
  if (s == nullptr) return row;  // no numbers: STRING, complex
  row["min"] = finite_or_null(s->min);
  row["max"] = finite_or_null(s->max);
  row["mean"] = finite_or_null(s->mean);
  row["std"] = finite_or_null(s->stddev);
  row["zeros"] = s->zeros;
  row["nans"] = s->nans;
  row["infinities"] = s->infinities;
  row["histogram"] = s->histogram;
  return row;
}

namespace {

// The attribute `name` of `node` as an integer, or `fallback` where absent or not an INT.
std::int64_t int_attribute(const Node& node, std::string_view name, std::int64_t fallback) {
  for (const Attribute a : node.attributes()) {
    if (a.name() == name && a.type() == AttributeType::int64) return a.i();
  }
  return fallback;
}

// MatMulNBits (com.microsoft) reads its input 1, B, as N x K integers of `bits` bits.
nlohmann::json logical_weight(const Node& reader, std::uint32_t input) {
  if (reader.op_type() != "MatMulNBits" || reader.domain() != "com.microsoft" || input != 1) {
    return nullptr;
  }
  const std::int64_t n = int_attribute(reader, "N", -1), k = int_attribute(reader, "K", -1);
  const std::int64_t bits = int_attribute(reader, "bits", 4);
  if (n <= 0 || k <= 0 || bits <= 0 || bits > 8) return nullptr;
  return {{"dtype", "UINT" + std::to_string(bits)},
          {"dims", {n, k}},
          {"block_size", int_attribute(reader, "block_size", 0)},
          {"op", "com.microsoft.MatMulNBits"}};
}

}  // namespace

nlohmann::json reader_json(const Node& reader, std::uint32_t input) {
  nlohmann::json out = nlohmann::json::object();
  if (std::string module = module_path(reader); !module.empty()) out["module"] = std::move(module);
  if (nlohmann::json logical = logical_weight(reader, input); !logical.is_null()) {
    out["logical"] = std::move(logical);
  }
  return out;
}

FirstReaders::FirstReaders(const Model& model) : graph_(model.graph()) {
  if (graph_) readers_ = initializer_readers(*graph_);
}

const InitializerReader* FirstReaders::of(const Tensor& t) const {
  if (!t.path().starts_with("graph.initializer[")) return nullptr;
  const auto found = readers_.find(t.name());
  return found == readers_.end() ? nullptr : &found->second;
}

std::uint32_t FirstReaders::position(const Tensor& t) const {
  const InitializerReader* r = of(t);
  return r == nullptr ? UINT32_MAX : r->node;
}

nlohmann::json FirstReaders::json(const Tensor& t) const {
  const InitializerReader* r = of(t);
  return r == nullptr ? nlohmann::json::object() : reader_json(graph_->nodes()[r->node], r->input);
}

}  // namespace onnxmap::cli
