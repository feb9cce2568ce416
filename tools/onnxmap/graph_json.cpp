#include "graph_json.hpp"

#include <string>

#include "shared/value_text.hpp"

namespace onnxmap::cli {

namespace {

nlohmann::json names_json(const Names& names) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string_view name : names) out.push_back(std::string(name));
  return out;
}

nlohmann::json value_json(const ValueInfo& value) {
  return {{"name", std::string(value.name())}, {"type", value.type().to_string()}};
}

class GraphWalk {
 public:
  explicit GraphWalk(int max_depth) : max_depth_(max_depth) {}

  nlohmann::json graph(const Graph& g, int level) const {
    nlohmann::json out{{"name", std::string(g.name())},
                       {"inputs", nlohmann::json::array()},
                       {"initializers", nlohmann::json::array()},
                       {"nodes", nlohmann::json::array()},
                       {"outputs", nlohmann::json::array()}};
    for (const ValueInfo input : g.inputs()) out["inputs"].push_back(value_json(input));
    for (const Tensor& t : g.initializers()) {
      out["initializers"].push_back({{"name", std::string(t.name())}, {"type", tensor_text(t)}});
    }
    for (const SparseTensor s : g.sparse_initializers()) {
      const auto values = s.values();
      out["initializers"].push_back(
          {{"name", values ? std::string(values->name()) : ""}, {"type", sparse_tensor_text(s)}});
    }
    for (const Node n : g.nodes()) out["nodes"].push_back(node(n, level));
    for (const ValueInfo output : g.outputs()) out["outputs"].push_back(value_json(output));
    return out;
  }

  nlohmann::json function(const Function& f) const {
    nlohmann::json out{{"domain", std::string(f.domain())},
                       {"name", std::string(f.name())},
                       {"inputs", names_json(f.inputs())},
                       {"outputs", names_json(f.outputs())},
                       {"attributes", names_json(f.attribute_names())},
                       {"nodes", nlohmann::json::array()}};
    for (const Node n : f.nodes()) out["nodes"].push_back(node(n, 0));
    return out;
  }

 private:
  nlohmann::json node(const Node& n, int level) const {
    nlohmann::json out{{"op_type", std::string(n.op_type())},
                       {"domain", std::string(n.domain())},
                       {"inputs", names_json(n.inputs())},
                       {"outputs", names_json(n.outputs())},
                       {"attributes", nlohmann::json::array()}};
    for (const Attribute a : n.attributes()) out["attributes"].push_back(attribute(a, level));
    return out;
  }

  nlohmann::json attribute(const Attribute& a, int level) const {
    nlohmann::json out{{"name", std::string(a.name())},
                       {"type", std::string(to_string(a.type()))},
                       {"value", attribute_value_text(a)}};
    if (max_depth_ >= 0 && level >= max_depth_) return out;
    nlohmann::json graphs = nlohmann::json::array();
    if (const auto g = a.g()) graphs.push_back(graph(*g, level + 1));
    for (const Graph& g : a.graphs()) graphs.push_back(graph(g, level + 1));
    if (!graphs.empty()) out["graphs"] = std::move(graphs);
    return out;
  }

  int max_depth_;
};

}  // namespace

nlohmann::json graph_json(const Model& model, int max_depth) {
  const GraphWalk walk(max_depth);
  nlohmann::json out{{"ir_version", model.ir_version()},
                     {"opset_import", nlohmann::json::object()},
                     {"functions", nlohmann::json::array()}};
  for (const OperatorSetId& o : model.opset_imports()) {
    out["opset_import"][std::string(domain_name(o.domain))] = o.version;
  }
  if (const auto g = model.graph()) out["graph"] = walk.graph(*g, 0);
  for (const Function f : model.functions()) out["functions"].push_back(walk.function(f));
  return out;
}

}  // namespace onnxmap::cli
