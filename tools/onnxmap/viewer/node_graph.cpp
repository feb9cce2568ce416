// The viewer's index of one graph (node_graph.hpp).

#include "node_graph.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <numeric>
#include <optional>
#include <queue>

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

NodeGraph::NodeGraph(Model model, std::optional<Graph> graph, bool nested)
    : model_(std::move(model)), graph_(std::move(graph)) {
  if (!graph_) return;
  for (const Node node : graph_->nodes()) nodes_.push_back(node);
  index_values();
  index_nodes();
  if (nested) index_outer_scope();
  index_producers();
  index_hosts();
  index_paths();
  index_order();
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

}  // namespace

// The values this subgraph reads from the graphs around it: drawn as its inputs, read by the
// nodes that read them directly or in their own subgraphs.
void NodeGraph::index_outer_scope() {
  const auto inside = [&](std::string_view v) {
    return v.empty() || producer_.contains(v) || initializers_.contains(v) ||
           graph_input_set_.contains(v);
  };
  for (std::uint32_t id = 0; id < nodes_.size(); ++id) {
    std::vector<std::string_view> nested;
    free_values(nodes_[id], nested, 64);
    for (const std::string_view v : nodes_[id].inputs()) {
      if (!inside(v) && outer_.insert(v).second) inputs_.push_back(v);
    }
    std::unordered_set<std::string_view> counted;
    for (const std::string_view v : nested) {
      if (inside(v) || !counted.insert(v).second) continue;
      if (outer_.insert(v).second) inputs_.push_back(v);
      consumers_[v].push_back(id);
    }
  }
}

// Each node's key and op type, who produces each value and who reads it.
void NodeGraph::index_nodes() {
  const std::size_t n = nodes_.size();
  std::unordered_set<std::string_view> taken(n);
  // Ops by qualified name, and (no string made per node) ai.onnx ops by their type's view.
  std::unordered_map<std::string, std::uint32_t> op_index;
  std::unordered_map<std::string_view, std::uint32_t> onnx_op_index;
  keys_.reserve(n);
  op_of_.reserve(n);
  producer_ = value_producers(graph_->nodes());
  consumers_.reserve(n);
  // Keys are unique: a node's name, the first time it is given; else "OpType#id", with "'"
  // added while a name (of any node) or an earlier key is spelled so. The names are gathered
  // at the first key made: most graphs name every node once and need none.
  std::unordered_set<std::string_view> names;
  for (std::uint32_t id = 0; id < n; ++id) {
    const Node& node = nodes_[id];
    const std::string_view name = node.name();
    if (!name.empty() && taken.insert(name).second) {
      keys_.push_back(name);
    } else {
      if (names.empty()) {
        names.reserve(n);
        for (const Node& named : nodes_) names.insert(named.name());
      }
      std::string made = std::string(node.op_type()) + "#" + std::to_string(id);
      while (names.contains(made) || taken.contains(made)) made += "'";
      keys_.push_back(made_keys_.emplace_back(std::move(made)));
      taken.insert(keys_.back());
    }
    const std::string_view domain = node.domain();
    const bool onnx = is_default_domain(domain);
    const auto onnx_op = onnx ? onnx_op_index.find(node.op_type()) : onnx_op_index.end();
    if (onnx_op == onnx_op_index.end()) {
      const auto [op, fresh] =
          op_index.try_emplace(qualified_op(node), static_cast<std::uint32_t>(op_names_.size()));
      if (fresh) op_names_.push_back(op->first);
      if (onnx) onnx_op_index.emplace(node.op_type(), op->second);
      op_of_.push_back(op->second);
    } else {
      op_of_.push_back(onnx_op->second);
    }
    for (const std::string_view input : node.inputs()) {
      if (!input.empty()) consumers_[input].push_back(id);
    }
  }
}

// The producers of each node's inputs and their names, in one array each (input_begin_).
void NodeGraph::index_producers() {
  input_begin_.reserve(nodes_.size() + 1);
  // Whether a value no node makes is a graph input (not an initializer): most graphs have a
  // few inputs, compared in place; more, through a set.
  const std::unordered_set<std::string_view> many(
      inputs_.size() > 16 ? inputs_.begin() : inputs_.end(), inputs_.end());
  const auto reads_graph_input = [&](std::string_view value) {
    if (inputs_.size() > 16) return many.contains(value);
    return std::find(inputs_.begin(), inputs_.end(), value) != inputs_.end();
  };
  for (const Node& node : nodes_) {
    input_begin_.push_back(static_cast<std::uint32_t>(input_producers_.size()));
    std::uint32_t graph_inputs = 0;
    for (const std::string_view input : node.inputs()) {
      const auto p = producer_.find(input);
      if (p == producer_.end()) {
        graph_inputs += !input.empty() && reads_graph_input(input);
        continue;
      }
      input_producers_.push_back(p->second);
      input_values_.push_back(input);
    }
    graph_input_reads_.push_back(graph_inputs);
  }
  input_begin_.push_back(static_cast<std::uint32_t>(input_producers_.size()));
}

// guests(i) from host_: the nodes drawn inside each node, in one array.
void NodeGraph::index_guests() {
  const std::size_t n = nodes_.size();
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

// The drawn nodes' edges (successors) and their topological order (Kahn's, smallest id first).
void NodeGraph::index_order() {
  const std::size_t n = nodes_.size();
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t id = 0; id < n; ++id) {
    if (!drawn(id)) continue;
    for_each_input(id, [&](std::uint32_t producer, std::string_view) {
      if (host_[producer] != id) edges.emplace_back(host_[producer], id);
    });
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  successor_begin_.assign(n + 1, 0);
  const bool in_order =
      std::all_of(edges.begin(), edges.end(), [](const auto& e) { return e.first < e.second; });
  std::vector<std::uint32_t> waiting(n, 0);  // unplaced predecessors
  for (const auto& [from, to] : edges) {
    ++successor_begin_[from + 1];
    ++waiting[to];
    successors_.push_back(to);
  }
  for (std::size_t id = 0; id < n; ++id) successor_begin_[id + 1] += successor_begin_[id];
  position_.resize(n);
  if (in_order) {  // as ONNX asks: the graph's own order is topological, Kahn's would keep it
    std::iota(position_.begin(), position_.end(), 0);
    return;
  }
  std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> ready;
  for (std::uint32_t id = 0; id < n; ++id) {
    if (waiting[id] == 0) ready.push(id);
  }
  std::vector<bool> placed(n, false);
  std::uint32_t next = 0;
  while (!ready.empty()) {
    const std::uint32_t id = ready.top();
    ready.pop();
    placed[id] = true;
    position_[id] = next++;
    for (const std::uint32_t s : successors(id)) {
      if (--waiting[s] == 0) ready.push(s);
    }
  }
  for (std::uint32_t id = 0; id < n; ++id) {
    if (!placed[id]) position_[id] = next++;
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
  if (!reads_intact()) return;  // made from a cut file's zeros (guard_reads.hpp): not kept
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

std::pair<std::size_t, std::size_t> NodeGraph::path_range(const std::string& prefix) const {
  const auto lo =
      std::lower_bound(by_path_.begin(), by_path_.end(), prefix,
                       [&](std::uint32_t id, const std::string& p) { return paths_[id] < p; });
  const auto hi = std::partition_point(
      lo, by_path_.end(), [&](std::uint32_t id) { return paths_[id].starts_with(prefix); });
  return {static_cast<std::size_t>(lo - by_path_.begin()),
          static_cast<std::size_t>(hi - by_path_.begin())};
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
