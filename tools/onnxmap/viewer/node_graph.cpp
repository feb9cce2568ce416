#include "node_graph.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <optional>

#include "tensor_list.hpp"

namespace onnxmap::cli::viewer {

namespace {

constexpr std::size_t kOpTypesShown = 6;
constexpr std::size_t kMaxEdges = 5000;

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

std::string op_name(const Node& node) {
  const std::string_view domain = node.domain();
  return (domain.empty() || domain == "ai.onnx" ? "" : std::string(domain) + ".") +
         std::string(node.op_type());
}

// One child of a folded prefix while it is being counted.
struct FoldGroup {
  std::string_view segment;
  std::uint32_t first = 0;  // its first node in graph order, which orders the children
  std::uint64_t nodes = 0;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> op_counts;  // by index in op_names_

  void add(std::uint32_t id, std::uint32_t op) {
    first = nodes++ == 0 ? id : std::min(first, id);
    const auto found = std::find_if(op_counts.begin(), op_counts.end(),
                                    [op](const auto& entry) { return entry.first == op; });
    if (found == op_counts.end()) {
      op_counts.emplace_back(op, 1);
    } else {
      ++found->second;
    }
  }
};

nlohmann::json top_op_types(FoldGroup group, const std::vector<std::string>& op_names) {
  std::stable_sort(group.op_counts.begin(), group.op_counts.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t k = 0; k < group.op_counts.size() && k < kOpTypesShown; ++k) {
    out[op_names[group.op_counts[k].first]] = group.op_counts[k].second;
  }
  return out;
}

}  // namespace

nlohmann::json names_json(const Names& names) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string_view name : names) out.push_back(std::string(name));
  return out;
}

NodeGraph::NodeGraph(Model model) : model_(std::move(model)) {
  const auto graph = model_.graph();
  if (!graph) return;
  for (const Node node : graph->nodes()) nodes_.push_back(node);
  index_nodes();
  index_producers();
  by_key_.resize(nodes_.size());
  std::iota(by_key_.begin(), by_key_.end(), 0);
  std::sort(by_key_.begin(), by_key_.end(),
            [&](std::uint32_t a, std::uint32_t b) { return keys_[a] < keys_[b]; });
  for (const Tensor& t : graph->initializers()) initializers_.insert(t.lookup_name());
  for (const ValueInfo v : graph->inputs()) graph_inputs_.insert(v.name());
  for (const ValueInfo v : graph->outputs()) graph_outputs_.insert(v.name());
}

// Each node's key and op type, who produces each value and who reads it.
void NodeGraph::index_nodes() {
  const std::size_t n = nodes_.size();
  std::unordered_set<std::string_view> taken(n);
  std::unordered_map<std::string, std::uint32_t> op_index;
  keys_.reserve(n);
  op_of_.reserve(n);
  producer_.reserve(n);
  consumers_.reserve(n);
  for (std::uint32_t id = 0; id < n; ++id) {
    const Node& node = nodes_[id];
    const std::string_view name = node.name();
    if (!name.empty() && taken.insert(name).second) {
      keys_.push_back(name);
    } else {
      keys_.push_back(
          made_keys_.emplace_back(std::string(node.op_type()) + "#" + std::to_string(id)));
    }
    const auto [op, fresh] =
        op_index.try_emplace(op_name(node), static_cast<std::uint32_t>(op_names_.size()));
    if (fresh) op_names_.push_back(op->first);
    op_of_.push_back(op->second);
    for (const std::string_view input : node.inputs()) {
      if (!input.empty()) consumers_[input].push_back(id);
    }
    for (const std::string_view output : node.outputs()) {
      if (!output.empty()) producer_.emplace(output, id);
    }
  }
}

// The producers of each node's inputs, in one array (input_begin_, input_producers_).
void NodeGraph::index_producers() {
  input_begin_.reserve(nodes_.size() + 1);
  for (const Node& node : nodes_) {
    input_begin_.push_back(static_cast<std::uint32_t>(input_producers_.size()));
    for (const std::string_view input : node.inputs()) {
      const auto p = producer_.find(input);
      if (p != producer_.end()) input_producers_.push_back(p->second);
    }
  }
  input_begin_.push_back(static_cast<std::uint32_t>(input_producers_.size()));
}

std::pair<std::size_t, std::size_t> NodeGraph::key_range(const std::string& prefix) const {
  const auto lo =
      std::lower_bound(by_key_.begin(), by_key_.end(), prefix,
                       [&](std::uint32_t id, const std::string& p) { return keys_[id] < p; });
  const auto hi = std::partition_point(lo, by_key_.end(), [&](std::uint32_t id) {
    return std::string_view(keys_[id]).starts_with(prefix);
  });
  return {static_cast<std::size_t>(lo - by_key_.begin()),
          static_cast<std::size_t>(hi - by_key_.begin())};
}

nlohmann::json NodeGraph::fold(std::string prefix, std::uint64_t offset,
                               std::uint64_t limit) const {
  auto [lo, hi] = key_range(prefix);
  std::vector<FoldGroup> groups;
  std::vector<std::uint32_t> group_at(hi - lo);  // the group of by_key_[lo + k]
  for (;;) {
    groups.clear();
    std::unordered_map<std::string_view, std::uint32_t> index;
    for (std::size_t k = lo; k < hi; ++k) {
      const std::uint32_t id = by_key_[k];
      const std::string_view segment = next_segment(keys_[id], prefix.size());
      const auto [at, fresh] =
          index.try_emplace(segment, static_cast<std::uint32_t>(groups.size()));
      if (fresh) groups.push_back({segment, id, 0, {}});
      groups[at->second].add(id, op_of_[id]);
      group_at[k - lo] = at->second;
    }
    if (groups.size() != 1 || groups.front().nodes == 1) break;
    prefix += std::string(groups.front().segment);  // one group only: show its children instead
  }
  std::vector<std::uint32_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](auto a, auto b) { return groups[a].first < groups[b].first; });
  const std::size_t begin = std::min<std::size_t>(offset, order.size());
  const std::size_t end = std::min<std::size_t>(begin + limit, order.size());
  // Each child's place among the children in graph order, for those up to this page's end: the
  // edges of a page are the ones that reach it from this page or an earlier one.
  std::vector<std::int32_t> place_of_group(groups.size(), -1);
  for (std::size_t k = 0; k < end; ++k) place_of_group[order[k]] = static_cast<std::int32_t>(k);
  nlohmann::json children = nlohmann::json::array();
  for (std::size_t k = begin; k < end; ++k) {
    const FoldGroup& g = groups[order[k]];
    // A node named `prefix` exactly, among nodes named with it as a prefix.
    const std::string name = g.segment.empty() ? "(" + prefix + ")" : std::string(g.segment);
    nlohmann::json child = {{"name", name},
                            {"prefix", prefix + std::string(g.segment)},
                            {"nodes", g.nodes},
                            {"op_types", top_op_types(g, op_names_)}};
    if (g.nodes == 1) child["node"] = g.first;
    children.push_back(std::move(child));
  }
  return {
      {"prefix", prefix},
      {"nodes", hi - lo},
      {"total_children", order.size()},
      {"offset", begin},
      {"children", std::move(children)},
      {"edges", fold_edges(lo, hi, group_at, place_of_group, static_cast<std::int32_t>(begin))}};
}

// Values produced under one child and read under another, counted, for pairs of children
// placed by `place_of_group` of which one at least is at `first_on_page` or later.
nlohmann::json NodeGraph::fold_edges(std::size_t lo, std::size_t hi,
                                     const std::vector<std::uint32_t>& group_at,
                                     const std::vector<std::int32_t>& place_of_group,
                                     std::int32_t first_on_page) const {
  std::vector<std::int32_t> place(nodes_.size(), -1);  // each node's child, -1 past the page
  for (std::size_t k = lo; k < hi; ++k) place[by_key_[k]] = place_of_group[group_at[k - lo]];
  std::map<std::pair<std::int32_t, std::int32_t>, std::uint64_t> counts;
  for (std::size_t k = lo; k < hi && counts.size() < kMaxEdges; ++k) {
    const std::uint32_t id = by_key_[k];
    const std::int32_t to = place[id];
    if (to < 0) continue;
    for (std::uint32_t i = input_begin_[id]; i < input_begin_[id + 1]; ++i) {
      const std::int32_t from = place[input_producers_[i]];
      if (from >= 0 && from != to && std::max(from, to) >= first_on_page) ++counts[{from, to}];
    }
  }
  nlohmann::json edges = nlohmann::json::array();
  for (const auto& [ends, count] : counts) {
    edges.push_back({{"from", ends.first}, {"to", ends.second}, {"tensors", count}});
  }
  return edges;
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
      bool hit = needle.empty() || contains_folded(keys_[id], needle) ||
                 contains_folded(n.op_type(), needle);
      for (const std::string_view v : n.inputs()) hit = hit || contains_folded(v, needle);
      for (const std::string_view v : n.outputs()) hit = hit || contains_folded(v, needle);
      if (hit) found->push_back(id);
    }
    const std::lock_guard lock(search_mutex_);
    last_search_ = needle;
    last_matches_ = matches = found;
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
  return {{"id", id}, {"name", std::string(nodes_[id].name())}, {"op_type", op_name(nodes_[id])}};
}

nlohmann::json NodeGraph::consumers(std::string_view value, std::size_t limit) const {
  nlohmann::json out = nlohmann::json::array();
  const auto found = consumers_.find(value);
  const std::size_t total = found == consumers_.end() ? 0 : found->second.size();
  for (std::size_t k = 0; k < total && k < limit; ++k) out.push_back(node_ref(found->second[k]));
  return {{"consumers", std::move(out)}, {"total", total}};
}

}  // namespace onnxmap::cli::viewer
