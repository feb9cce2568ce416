// The viewer's index of one graph (node_graph.hpp).

#include "node_graph.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <optional>

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

std::string qualified_op(const Node& node) {
  const std::string_view domain = node.domain();
  return (is_default_domain(domain) ? "" : std::string(domain) + ".") + std::string(node.op_type());
}

}  // namespace

nlohmann::json names_json(const Names& names) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string_view name : names) out.push_back(std::string(name));
  return out;
}

NodeGraph::NodeGraph(Model model, std::optional<Graph> graph)
    : model_(std::move(model)), graph_(std::move(graph)) {
  if (!graph_) return;
  for (const Node node : graph_->nodes()) nodes_.push_back(node);
  index_values();
  index_nodes();
  index_producers();
  index_hosts();
  by_key_.resize(nodes_.size());
  std::iota(by_key_.begin(), by_key_.end(), 0);
  std::sort(by_key_.begin(), by_key_.end(),
            [&](std::uint32_t a, std::uint32_t b) { return keys_[a] < keys_[b]; });
}

// The graph's initializers, inputs, outputs and declared types.
void NodeGraph::index_values() {
  initializer_list_ = graph_->initializers();
  for (std::uint32_t i = 0; i < initializer_list_.size(); ++i) {
    initializers_.emplace(initializer_list_[i].name(), i);
  }
  for (const ValueInfo v : graph_->inputs()) {
    graph_input_set_.insert(v.name());
    if (!initializers_.contains(v.name())) inputs_.push_back(v.name());
    declared_types_.emplace(v.name(), v.type());
  }
  for (const ValueInfo v : graph_->outputs()) {
    graph_output_set_.insert(v.name());
    outputs_.push_back(v.name());
    declared_types_.emplace(v.name(), v.type());
  }
  for (const ValueInfo v : graph_->value_infos()) declared_types_.emplace(v.name(), v.type());
}

// Each node's key and op type, who produces each value and who reads it.
void NodeGraph::index_nodes() {
  const std::size_t n = nodes_.size();
  std::unordered_set<std::string_view> taken(n);
  std::unordered_map<std::string, std::uint32_t> op_index;
  keys_.reserve(n);
  op_of_.reserve(n);
  producer_ = value_producers(graph_->nodes());
  consumers_.reserve(n);
  // Keys are unique: a node's name, the first time it is given; else "OpType#id", with "'"
  // added while a name (of any node) or an earlier key is spelled so.
  std::unordered_set<std::string_view> names(n);
  for (const Node& node : nodes_) names.insert(node.name());
  for (std::uint32_t id = 0; id < n; ++id) {
    const Node& node = nodes_[id];
    const std::string_view name = node.name();
    if (!name.empty() && taken.insert(name).second) {
      keys_.push_back(name);
    } else {
      std::string made = std::string(node.op_type()) + "#" + std::to_string(id);
      while (names.contains(made) || taken.contains(made)) made += "'";
      keys_.push_back(made_keys_.emplace_back(std::move(made)));
      taken.insert(keys_.back());
    }
    const auto [op, fresh] =
        op_index.try_emplace(qualified_op(node), static_cast<std::uint32_t>(op_names_.size()));
    if (fresh) op_names_.push_back(op->first);
    op_of_.push_back(op->second);
    for (const std::string_view input : node.inputs()) {
      if (!input.empty()) consumers_[input].push_back(id);
    }
  }
}

// The producers of each node's inputs and their names, in one array each (input_begin_).
void NodeGraph::index_producers() {
  input_begin_.reserve(nodes_.size() + 1);
  for (const Node& node : nodes_) {
    input_begin_.push_back(static_cast<std::uint32_t>(input_producers_.size()));
    for (const std::string_view input : node.inputs()) {
      const auto p = producer_.find(input);
      if (p == producer_.end()) continue;
      input_producers_.push_back(p->second);
      input_values_.push_back(input);
    }
  }
  input_begin_.push_back(static_cast<std::uint32_t>(input_producers_.size()));
}

// A Constant or Identity whose one output feeds one node, and is not a graph output, is drawn
// inside that node (and a chain of them inside the last one's reader).
void NodeGraph::index_hosts() {
  const std::size_t n = nodes_.size();
  host_.resize(n);
  std::vector<std::optional<std::uint32_t>> reader(n);
  for (std::uint32_t id = 0; id < n; ++id) {
    host_[id] = id;
    const Node& node = nodes_[id];
    const std::string_view op = node.op_type();
    if ((op != "Constant" && op != "Identity") || !node.domain().empty()) continue;
    const Names outputs = node.outputs();
    if (outputs.size() != 1 || graph_output_set_.contains(*outputs.begin())) continue;
    const auto found = consumers_.find(*outputs.begin());
    if (found == consumers_.end()) continue;
    const std::vector<std::uint32_t>& readers = found->second;
    if (std::all_of(readers.begin(), readers.end(), [&](auto r) { return r == readers[0]; })) {
      reader[id] = readers[0];
    }
  }
  for (std::uint32_t id = 0; id < n; ++id) {
    std::uint32_t at = id;
    // At most n steps: a malformed graph may loop.
    for (std::size_t steps = 0; reader[at] && steps < n && *reader[at] != id; ++steps) {
      at = *reader[at];
    }
    host_[id] = at;
  }
  guest_begin_.assign(n + 1, 0);
  for (std::uint32_t id = 0; id < n; ++id) {
    if (host_[id] != id) ++guest_begin_[host_[id] + 1];
  }
  for (std::size_t id = 0; id < n; ++id) guest_begin_[id + 1] += guest_begin_[id];
  guests_.resize(guest_begin_[n]);
  std::vector<std::uint32_t> filled(guest_begin_.begin(), guest_begin_.end() - 1);
  for (std::uint32_t id = 0; id < n; ++id) {
    if (host_[id] != id) guests_[filled[host_[id]]++] = id;
  }
}

namespace {
constexpr std::size_t kMemoEntries = 32;
constexpr std::size_t kMemoBytes = std::size_t{256} << 20;
}  // namespace

std::shared_ptr<const void> NodeGraph::memo_find(const std::string& key) const {
  const std::lock_guard lock(memo_mutex_);
  for (auto at = memo_.begin(); at != memo_.end(); ++at) {
    if (at->key != key) continue;
    MemoEntry entry = std::move(*at);
    memo_.erase(at);
    memo_.push_back(std::move(entry));
    return memo_.back().value;
  }
  return nullptr;
}

// The newest is kept even alone past the budget: the request that made it uses it.
void NodeGraph::memo_keep(const std::string& key, std::shared_ptr<const void> value,
                          std::size_t bytes) const {
  const std::lock_guard lock(memo_mutex_);
  memo_.push_back({key, std::move(value), bytes});
  memo_bytes_ += bytes;
  while (memo_.size() > 1 && (memo_.size() > kMemoEntries || memo_bytes_ > kMemoBytes)) {
    memo_bytes_ -= memo_.front().bytes;
    memo_.pop_front();
  }
}

std::optional<std::uint32_t> NodeGraph::producer(std::string_view value) const {
  const auto found = producer_.find(value);
  if (found == producer_.end()) return std::nullopt;
  return found->second;
}

std::span<const std::uint32_t> NodeGraph::readers(std::string_view value) const {
  const auto found = consumers_.find(value);
  if (found == consumers_.end()) return {};
  return found->second;
}

std::optional<Tensor> NodeGraph::initializer(std::string_view value) const {
  const auto found = initializers_.find(value);
  if (found == initializers_.end()) return std::nullopt;
  return initializer_list_[found->second];
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
  return {
      {"id", id}, {"name", std::string(nodes_[id].name())}, {"op_type", qualified_op(nodes_[id])}};
}

nlohmann::json NodeGraph::consumers(std::string_view value, std::size_t limit) const {
  nlohmann::json out = nlohmann::json::array();
  const auto found = consumers_.find(value);
  const std::size_t total = found == consumers_.end() ? 0 : found->second.size();
  for (std::size_t k = 0; k < total && k < limit; ++k) out.push_back(node_ref(found->second[k]));
  return {{"consumers", std::move(out)}, {"total", total}};
}

}  // namespace onnxmap::cli::viewer
