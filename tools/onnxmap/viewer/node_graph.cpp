// The viewer's index of one graph (node_graph.hpp).

#include "node_graph.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <numeric>
#include <optional>
#include <queue>

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

}  // namespace

nlohmann::json names_json(const Names& names) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string_view name : names) out.push_back(std::string(name));
  return out;
}

NodeGraph::NodeGraph(Model model, std::optional<Graph> graph, bool nested)
    : model_(std::move(model)), graph_(std::move(graph)) {
  if (!graph_) return;
  const auto all = graph_->nodes();
  nodes_.reserve(all.size());
  for (const Node node : all) nodes_.push_back(node);
  index_values();
  index_nodes();
  subgraph_reads_ = index_subgraph_reads(nested);
  index_readers(subgraph_reads_);
  index_producers(subgraph_reads_);
  index_hosts();
  index_paths();
  index_order();
}

// guests(i): the nodes hosted by drawn node i (host_), and the shared weight preparation it
// reads: the parameters that it or what it hosts reads, and those they read, hosted by another
// node (at most kSharedGuests of them a node: a hostile chain read by every node stays linear);
// in node order, in one array.
void NodeGraph::index_guests() {
  const std::size_t n = nodes_.size();
  std::vector<std::uint32_t> hosted_begin(n + 1, 0), hosted;
  for (std::uint32_t id = 0; id < n; ++id) {
    if (host_[id] != id) ++hosted_begin[host_[id] + 1];
  }
  for (std::size_t id = 0; id < n; ++id) hosted_begin[id + 1] += hosted_begin[id];
  hosted.resize(hosted_begin[n]);
  std::vector<std::uint32_t> filled(hosted_begin.begin(), hosted_begin.end() - 1);
  for (std::uint32_t id = 0; id < n; ++id) {
    if (host_[id] != id) hosted[filled[host_[id]]++] = id;
  }
  guest_begin_.assign(n + 1, 0);
  guests_.clear();
  guests_.reserve(hosted.size());
  std::vector<std::uint32_t> seen(n, kNone);  // seen[p] == id: p is inside id already
  std::vector<std::uint32_t> inside;          // id, then its guests as they are found
  for (std::uint32_t id = 0; id < n; ++id) {
    const std::size_t first = guests_.size();
    if (host_[id] == id) {
      inside.assign(1, id);
      seen[id] = id;
      for (std::uint32_t k = hosted_begin[id]; k < hosted_begin[id + 1]; ++k) {
        inside.push_back(hosted[k]);
        seen[hosted[k]] = id;
      }
      std::size_t shared = 0;
      for (std::size_t k = 0; k < inside.size() && shared < kSharedGuests; ++k) {
        for (const std::uint32_t p : input_producers(inside[k])) {
          if (!parameter_[p] || seen[p] == id || shared == kSharedGuests) continue;
          seen[p] = id;
          inside.push_back(p);  // not hosted by id (those are seen): shared
          ++shared;
        }
      }
      guests_.insert(guests_.end(), std::next(inside.begin()), inside.end());
      std::sort(guests_.begin() + static_cast<std::ptrdiff_t>(first), guests_.end());
    }
    guest_begin_[id + 1] = static_cast<std::uint32_t>(guests_.size());
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
  const std::lock_guard lock(memo_mutex_);
  memo_.push_back({key, std::move(value), bytes});
  memo_bytes_ += bytes;
  while (memo_.size() > 1 && (memo_.size() > kMemoEntries || memo_bytes_ > kMemoBytes)) {
    memo_bytes_ -= memo_.front().bytes;
    memo_.pop_front();
  }
}

std::optional<std::uint32_t> NodeGraph::producer(std::string_view value) const {
  const std::uint32_t v = find_value(value);
  if (v == kNone || producer_of_[v] == kNone) return std::nullopt;
  return producer_of_[v];
}

std::span<const std::uint32_t> NodeGraph::readers(std::string_view value) const {
  const std::uint32_t v = find_value(value);
  return v == kNone ? std::span<const std::uint32_t>{} : readers_of(v);
}

void NodeGraph::order_summary(std::vector<std::pair<std::uint32_t, std::uint32_t>>& ops) const {
  const auto rank = [this](std::uint32_t op) {
    return summary_rank(op_domains_[op], op_types_[op]);
  };
  std::stable_sort(ops.begin(), ops.end(), [&](const auto& a, const auto& b) {
    const int ra = rank(a.first), rb = rank(b.first);
    return ra != rb ? ra < rb : a.second > b.second;
  });
}

bool NodeGraph::outer_scope(std::string_view value) const {
  const std::uint32_t v = find_value(value);
  return v != kNone && (value_flags_[v] & kOuter) != 0;
}

std::optional<Tensor> NodeGraph::initializer(std::string_view value) const {
  const std::uint32_t v = find_value(value);
  if (v == kNone || initializer_of_[v] == kNone) return std::nullopt;
  return initializer_list_[initializer_of_[v]];
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
  return {{"id", id}, {"name", std::string(names_[id])}, {"op_type", op_names_[op_of_[id]]}};
}

nlohmann::json NodeGraph::consumers(std::string_view value, std::size_t limit) const {
  nlohmann::json out = nlohmann::json::array();
  const std::span<const std::uint32_t> found = readers(value);
  const std::size_t total = found.size();
  for (std::size_t k = 0; k < total && k < limit; ++k) out.push_back(node_ref(found[k]));
  return {{"consumers", std::move(out)}, {"total", total}};
}

}  // namespace onnxmap::cli::viewer
