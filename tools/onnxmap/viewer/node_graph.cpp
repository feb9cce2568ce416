// The viewer's graph (node_graph.hpp): its search, its values' initializers and types.

#include "node_graph.hpp"

#include <algorithm>
#include <cctype>

#include "onnxmap/guard_reads.hpp"
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
    if (reads_intact()) {  // none read from a cut file's zeros
      last_search_ = needle;
      last_matches_ = found;
    }
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
