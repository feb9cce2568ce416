// NodeGraph's index pass (node_graph.hpp): each node's fields read once from the model into the
// graph the folding reads (fold_graph.hpp), with what its subgraphs read.

#include <algorithm>
#include <unordered_set>

#include "fold_rules.hpp"
#include "node_graph.hpp"

namespace onnxmap::cli::viewer {

namespace {

// The values the graphs of `node`'s attributes read and do not make (nor declare as inputs or
// initializers), nested graphs included, into `free` (`depth` bounds a hostile nesting).
void free_values(const Node& node, std::vector<std::string_view>& free, int depth);

void free_values(const Graph& graph, std::vector<std::string_view>& free, int depth) {
  std::unordered_set<std::string_view> made;
  for (const ValueInfo v : graph.inputs()) made.insert(v.name());
  for (const Tensor& t : graph.initializers()) made.insert(t.name());
  std::vector<std::string_view> read;
  for (const Node node : graph.nodes()) {
    for (const std::string_view input : node.inputs()) read.push_back(input);
    free_values(node, read, depth);
    for (const std::string_view output : node.outputs()) made.insert(output);
  }
  for (const std::string_view v : read) {
    if (!v.empty() && !made.contains(v)) free.push_back(v);
  }
}

void free_values(const Node& node, std::vector<std::string_view>& free, int depth) {
  if (depth <= 0) return;
  for (const Attribute a : node.attributes()) {
    if (const auto g = a.g()) free_values(*g, free, depth - 1);
    for (const Graph g : a.graphs()) free_values(g, free, depth - 1);
  }
}

// The module path torch's dynamo exporter records for `node` in its `namespace` metadata
// (module_path), as a scope ("model.layers.0.mlp."); "" without that metadata. Read only where
// the name's scope does not tell (fold_rules.hpp: fold_paths reads it only there).
std::string module_scope(const Node& node, std::string_view name, std::string_view op) {
  if (telling_scope(name.substr(0, scope_length(name, op)))) return {};
  for (const StringStringEntry& entry : node.metadata_props()) {
    if (entry.key != "namespace") continue;
    const std::string module = module_path(node);
    return module.empty() ? module : module + ".";
  }
  return {};
}

bool has_subgraphs(const Node& node) {
  const auto attributes = node.attributes();
  return std::any_of(attributes.begin(), attributes.end(),
                     [](Attribute a) { return a.g().has_value() || !a.graphs().empty(); });
}

}  // namespace

void NodeGraph::index(bool nested) {
  initializer_list_ = graph_->initializers();
  // Most nodes make one value: about one value per node and initializer.
  fold_.reserve(nodes_.size(), nodes_.size() + initializer_list_.size() + 16);
  for (const Tensor& t : initializer_list_) fold_.add_initializer(t.name());
  for (const ValueInfo info : graph_->inputs()) {
    fold_.add_graph_input(info.name());
    declared_types_.emplace(info.name(), info.type());
  }
  for (const ValueInfo info : graph_->outputs()) {
    fold_.add_graph_output(info.name());
    declared_types_.emplace(info.name(), info.type());
  }
  for (const ValueInfo v : graph_->value_infos()) declared_types_.emplace(v.name(), v.type());
  std::vector<std::string_view> inputs, outputs, free;
  for (const Node& node : nodes_) {
    const std::string_view name = node.name(), op = node.op_type();
    inputs.clear();
    outputs.clear();
    free.clear();
    for (const std::string_view input : node.inputs()) inputs.push_back(input);
    for (const std::string_view output : node.outputs()) outputs.push_back(output);
    free_values(node, free, 64);
    fold_.add_node({op, node.domain(), name, module_scope(node, name, op), has_subgraphs(node)},
                   inputs, outputs, free);
  }
  fold_.finish(nested);
}

}  // namespace onnxmap::cli::viewer
