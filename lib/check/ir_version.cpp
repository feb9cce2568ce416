// Fields and data types newer than the IR version a model declares. The versions come from the
// history in onnx.proto's Version enum: a reader of the declared version would not know them.
// Each distinct finding is reported once, at its first place, with the number of places.

#include <map>
#include <string>

#include "check/checks.hpp"
#include "onnxmap/annotations.hpp"

namespace onnxmap::detail {

namespace {

// The IR version that introduced a data type.
std::int64_t data_type_since(std::int32_t type) {
  switch (static_cast<DataType>(type)) {
    case DataType::bfloat16: return 4;
    case DataType::float8e4m3fn:
    case DataType::float8e4m3fnuz:
    case DataType::float8e5m2:
    case DataType::float8e5m2fnuz: return 9;
    case DataType::uint4:
    case DataType::int4: return 10;
    case DataType::float4e2m1: return 11;
    case DataType::float8e8m0: return 12;
    case DataType::uint2:
    case DataType::int2: return 13;
    default: return 1;
  }
}

class IrChecker {
 public:
  IrChecker(const Model& model, CheckReport& report)
      : model_(model), report_(report), ir_(model.ir_version()) {}

  void run() {
    if (ir_ <= 0) {
      // Nothing to compare against: say so once instead of flagging every field.
      add_problem(report_, ProblemKind::ir_version, "ir_version",
                  "ir_version is missing (or not positive); every model must declare one");
      return;
    }
    constexpr std::uint64_t kNoOffset = Error::kNoOffset;
    if (ir_ < 3 && !model_.opset_imports().empty())
      need(3, "opset_import", "opset_import", kNoOffset);
    if (ir_ < 7 && !model_.training_info().empty())
      need(7, "training_info", "training_info", kNoOffset);
    if (ir_ < 8 && !model_.functions().empty())
      need(8, "model-local functions", "functions", kNoOffset);
    if (ir_ < 11 && !device_configurations(model_).empty())
      need(11, "device configurations", "configuration", kNoOffset);
    if (const auto graph = model_.graph()) check_graph(*graph, "graph");
    const auto training = model_.training_info();
    for (std::size_t i = 0; i < training.size(); ++i) {
      const std::string path = "training_info[" + std::to_string(i) + "]";
      if (const auto g = training[i].initialization()) check_graph(*g, path + ".initialization");
      if (const auto g = training[i].algorithm()) check_graph(*g, path + ".algorithm");
    }
    const auto functions = model_.functions();
    for (std::size_t i = 0; i < functions.size(); ++i) {
      check_function(functions[i], "functions[" + std::to_string(i) + "]");
    }
    for (std::size_t i = 0; i < model_.tensor_count(); ++i) check_tensor(model_.tensor_at(i));
    emit();
  }

 private:
  struct Finding {
    std::int64_t since = 0;
    std::string first_path;
    std::uint64_t offset = 0;
    std::uint64_t places = 0;
  };

  // `what` needs IR version `since`; found at `path`. Callers test `ir_ < since` first, so that
  // models of a recent IR version (nearly all) cost no decoding or path building here.
  void need(std::int64_t since, const std::string& what, const std::string& path,
            std::uint64_t offset) {
    if (ir_ >= since) return;
    auto [it, added] = findings_.try_emplace(what);
    if (added) {
      order_.push_back(what);
      it->second = {since, path, offset, 0};
    }
    ++it->second.places;
  }
  void emit() {
    for (const std::string& what : order_) {
      const Finding& f = findings_.at(what);
      add_problem(report_, ProblemKind::ir_version, f.first_path,
                  what + " needs IR version " + std::to_string(f.since) +
                      ", but the model declares " + std::to_string(ir_) +
                      (f.places > 1 ? " (" + std::to_string(f.places) + " places)" : ""),
                  f.offset);
    }
  }

  void check_data_type(std::int32_t type, const std::string& path, std::uint64_t offset) {
    if (type > kMaxDataType || type < 0) {
      // A type this build does not know is only wrong when the declared IR is one it knows.
      if (ir_ <= kLatestIrVersion) {
        need(kLatestIrVersion + 1, "data type " + std::to_string(type), path, offset);
      }
      return;
    }
    need(data_type_since(type), "data type " + to_string(static_cast<DataType>(type)), path,
         offset);
  }

  void check_type(const Type& type, const std::string& path, std::uint64_t offset, int depth) {
    constexpr int kMaxTypeDepth = 64;  // the index bounds nesting already; this bounds recursion
    if (depth > kMaxTypeDepth) return;
    switch (type.kind()) {
      case Type::Kind::tensor:
        check_data_type(static_cast<std::int32_t>(type.elem_type()), path, offset);
        break;
      case Type::Kind::sparse_tensor:
        need(8, "sparse tensor types", path, offset);
        check_data_type(static_cast<std::int32_t>(type.elem_type()), path, offset);
        break;
      case Type::Kind::optional:
        need(8, "optional types", path, offset);
        check_type(type.element(), path, offset, depth + 1);
        break;
      case Type::Kind::sequence: check_type(type.element(), path, offset, depth + 1); break;
      case Type::Kind::map:
        check_data_type(static_cast<std::int32_t>(type.map_key_type()), path, offset);
        check_type(type.element(), path, offset, depth + 1);
        break;
      case Type::Kind::opaque:
      case Type::Kind::none: break;
    }
  }

  void check_value_infos(const ViewRange<ValueInfo>& infos, const std::string& path) {
    for (std::size_t i = 0; i < infos.size(); ++i) {
      const std::string at = path + "[" + std::to_string(i) + "]";
      if (ir_ < 10 && !infos[i].metadata_props().empty())
        need(10, "metadata_props on value infos", at + ".metadata_props",
             detail::offset_of(infos[i]));
      check_type(infos[i].type(), at + ".type", detail::offset_of(infos[i]), 0);
    }
  }

  void check_graph(const Graph& graph, const std::string& path) {
    if (ir_ < 6 && !graph.sparse_initializers().empty())
      need(6, "sparse_initializer", path + ".sparse_initializer", detail::offset_of(graph));
    if (ir_ < 5 && !quantization_annotations(graph).empty())
      need(5, "quantization_annotation", path + ".quantization_annotation",
           detail::offset_of(graph));
    if (ir_ < 10 && !graph.metadata_props().empty())
      need(10, "metadata_props on graphs", path + ".metadata_props", detail::offset_of(graph));
    check_value_infos(graph.inputs(), path + ".input");
    check_value_infos(graph.outputs(), path + ".output");
    check_value_infos(graph.value_infos(), path + ".value_info");
    const auto nodes = graph.nodes();
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      check_node(nodes[k], path + ".node[" + std::to_string(k) + "]");
    }
  }

  void check_node(const Node& node, const std::string& path) {
    const std::uint64_t at = detail::offset_of(node);
    if (ir_ < 3 && !node.domain().empty()) need(3, "node domains", path + ".domain", at);
    if (ir_ < 10 && !node.overload().empty()) need(10, "overload on nodes", path + ".overload", at);
    if (ir_ < 10 && !node.metadata_props().empty())
      need(10, "metadata_props on nodes", path + ".metadata_props", at);
    if (ir_ < 11 && !device_configurations(node).empty())
      need(11, "device_configurations on nodes", path + ".device_configurations", at);
    const auto attributes = node.attributes();
    for (std::size_t a = 0; a < attributes.size(); ++a) {
      const Attribute attr = attributes[a];
      const std::string attr_path = path + ".attribute[" + std::to_string(a) + "]";
      const AttributeType type = attr.type();
      if (ir_ >= 2 && type == AttributeType::undefined) {
        add_problem(report_, ProblemKind::ir_version, attr_path + ".type",
                    "attribute '" + std::string(attr.name()) +
                        "' has no type, which IR version 2 and later require",
                    detail::offset_of(attr));
      }
      if (ir_ < 6 && (attr.sparse_tensor().has_value() || !attr.sparse_tensors().empty()))
        need(6, "sparse tensor attributes", attr_path, detail::offset_of(attr));
      if (const auto g = attr.g()) check_graph(*g, attr_path + ".g");
      const auto graphs = attr.graphs();
      for (std::size_t i = 0; i < graphs.size(); ++i) {
        check_graph(graphs[i], attr_path + ".graphs[" + std::to_string(i) + "]");
      }
      if (type == AttributeType::type_protos) {
        for (std::size_t i = 0; const Type& tp : attr.type_protos()) {
          check_type(tp, attr_path + ".type_protos[" + std::to_string(i++) + "]",
                     detail::offset_of(attr), 0);
        }
      }
      if (const auto tp = type == AttributeType::type_proto ? attr.tp() : std::nullopt) {
        check_type(*tp, attr_path + ".tp", detail::offset_of(attr), 0);
      }
    }
  }

  void check_function(const Function& function, const std::string& path) {
    const std::uint64_t at = detail::offset_of(function);
    if (ir_ < 9 && !function.attribute_defaults().empty())
      need(9, "attribute_proto on functions", path + ".attribute_proto", at);
    if (ir_ < 10 && !function.overload().empty())
      need(10, "overload on functions", path + ".overload", at);
    if (ir_ < 10 && !function.metadata_props().empty())
      need(10, "metadata_props on functions", path + ".metadata_props", at);
    check_value_infos(function.value_infos(), path + ".value_info");
    const auto nodes = function.nodes();
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      check_node(nodes[k], path + ".node[" + std::to_string(k) + "]");
    }
  }

  // Paths are built only for findings: a model may hold hundreds of thousands of tensors.
  void check_tensor(const Tensor& tensor) {
    const auto type = static_cast<std::int32_t>(tensor.data_type());
    const bool unknown = type > kMaxDataType || type < 0;
    if (unknown ? ir_ <= kLatestIrVersion : data_type_since(type) > ir_) {
      check_data_type(type, tensor.path() + ".data_type", detail::offset_of(tensor));
    }
    if (ir_ < 10 && !tensor.metadata_props().empty()) {
      need(10, "metadata_props on tensors", tensor.path() + ".metadata_props",
           detail::offset_of(tensor));
    }
  }

  const Model& model_;
  CheckReport& report_;
  std::int64_t ir_;
  std::map<std::string, Finding> findings_;
  std::vector<std::string> order_;
};

}  // namespace

void check_ir_version(const Model& model, CheckReport& report) {
  IrChecker(model, report).run();
}

}  // namespace onnxmap::detail
