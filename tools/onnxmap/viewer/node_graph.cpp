// The viewer's graph (node_graph.hpp): its index pass (each node's fields read once from the
// model into the graph the folding reads, with what its subgraphs read), its search, its
// values' initializers and types.

#include "node_graph.hpp"

#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "fold_rules.hpp"
#include "shared/value_text.hpp"

namespace onnxmap::cli::viewer {

namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains_folded(std::string_view haystack, const std::string& needle_lower) {
  return std::search(haystack.begin(), haystack.end(), needle_lower.begin(), needle_lower.end(),
                     [](char a, char b) {
                       return std::tolower(static_cast<unsigned char>(a)) == b;
                     }) != haystack.end();
}

// The values the graphs of `node`'s attributes read and do not make (nor declare as inputs or
// initializers), nested graphs included, into `free` (`depth` bounds a hostile nesting); whether
// it has a graph attribute (one pass over the attributes, which most nodes have none of).
bool free_values(const Node& node, std::vector<std::string_view>& free, int depth);

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

bool free_values(const Node& node, std::vector<std::string_view>& free, int depth) {
  if (depth <= 0) return false;
  bool graphs = false;
  for (const Attribute a : node.attributes()) {
    if (const auto g = a.g()) {
      graphs = true;
      free_values(*g, free, depth - 1);
    }
    for (const Graph g : a.graphs()) {
      graphs = true;
      free_values(g, free, depth - 1);
    }
  }
  return graphs;
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

}  // namespace

nlohmann::json names_json(const Names& names) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string_view name : names) out.push_back(std::string(name));
  return out;
}

NodeGraph::NodeGraph(Model model, std::optional<Graph> graph, bool nested)
    : model_(std::move(model)), graph_(std::move(graph)) {
  if (graph_) {
    const auto all = graph_->nodes();
    nodes_.reserve(all.size());
    for (const Node node : all) nodes_.push_back(node);
    index(nested);
  } else {
    fold_.finish(nested);
  }
}

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
    const bool subgraphs = free_values(node, free, 64);
    fold_.add_node({op, node.domain(), name, module_scope(node, name, op), subgraphs}, inputs,
                   outputs, free);
  }
  fold_.finish(nested);
}

bool NodeGraph::outer_scope(std::string_view value) const {
  const std::uint32_t v = fold_.find_value(value);
  return v != FoldGraph::kNone && fold_.outer(v);
}

std::optional<Tensor> NodeGraph::initializer(std::string_view value) const {
  const std::uint32_t v = fold_.find_value(value);
  if (v == FoldGraph::kNone || fold_.initializer_of(v) == FoldGraph::kNone) return std::nullopt;
  return initializer_list_[fold_.initializer_of(v)];
}

std::string NodeGraph::value_type(std::string_view value) const {
  if (const auto found = declared_types_.find(value); found != declared_types_.end()) {
    return found->second.to_string();
  }
  if (const auto t = initializer(value)) {
    return std::string(to_string(t->data_type())) + dims_text(t->dims());
  }
  return "";
}

nlohmann::json NodeGraph::search(const std::string& text, std::uint64_t offset,
                                 std::uint64_t limit) const {
  const std::string needle = lowercase(text);
  std::shared_ptr<const std::vector<std::uint32_t>> matches;
  {
    const std::lock_guard lock(search_mutex_);
    if (last_matches_ && last_search_ == needle) matches = last_matches_;
  }
  if (!matches) {
    auto found = std::make_shared<std::vector<std::uint32_t>>();
    for (std::uint32_t id = 0; id < nodes_.size(); ++id) {
      const Node& n = nodes_[id];
      bool hit = needle.empty() || contains_folded(fold_.key(id), needle) ||
                 contains_folded(n.op_type(), needle);
      for (const std::string_view v : n.inputs()) hit = hit || contains_folded(v, needle);
      for (const std::string_view v : n.outputs()) hit = hit || contains_folded(v, needle);
      if (hit) found->push_back(id);
    }
    matches = found;
    const std::lock_guard lock(search_mutex_);
    last_search_ = needle;
    last_matches_ = found;
  }
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t k = offset; k < matches->size() && rows.size() < limit; ++k) {
    const Node& n = nodes_[(*matches)[k]];
    nlohmann::json row = node_ref((*matches)[k]);
    row["domain"] = std::string(n.domain());
    row["inputs"] = names_json(n.inputs());
    row["outputs"] = names_json(n.outputs());
    rows.push_back(std::move(row));
  }
  return {{"total", nodes_.size()},
          {"matched", matches->size()},
          {"offset", offset},
          {"rows", std::move(rows)}};
}

nlohmann::json NodeGraph::node_ref(std::uint32_t id) const {
  return {
      {"id", id}, {"name", std::string(fold_.name(id))}, {"op_type", fold_.op_name(fold_.op(id))}};
}

nlohmann::json NodeGraph::consumers(std::string_view value, std::size_t limit) const {
  nlohmann::json out = nlohmann::json::array();
  const std::span<const std::uint32_t> found = fold_.readers(value);
  const std::size_t total = found.size();
  for (std::size_t k = 0; k < total && k < limit; ++k) out.push_back(node_ref(found[k]));
  return {{"consumers", std::move(out)}, {"total", total}};
}

}  // namespace onnxmap::cli::viewer
