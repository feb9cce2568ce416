// The units of a name prefix (graph_units.hpp).

#include "graph_units.hpp"

#include <algorithm>
#include <numeric>
#include <span>

#include "tensor_list.hpp"

namespace onnxmap::cli::viewer {

namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t value) {
  h ^= value + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

// Where the inputs of drawn node `id` (and its guests) come from, sorted: 0 from outside `ids`
// (another unit, or a graph input), else 1 + the producer's place in `ids` (sorted node ids).
// Sorted, so that a layer reading the graph input reads as one reading the layer before it.
// `from` is the caller's, reused: a level of 300,000 units makes no vector per unit.
void sources(const FoldGraph& graph, std::uint32_t id, std::span<const std::uint32_t> ids,
             std::vector<std::uint64_t>& from) {
  from.clear();
  graph.for_each_input(id, [&](std::uint32_t producer, std::string_view) {
    const std::uint32_t host = graph.host(producer);
    const auto at = std::lower_bound(ids.begin(), ids.end(), host);
    from.push_back(at != ids.end() && *at == host ? at - ids.begin() + 1 : 0);
  });
  std::uint32_t outside = graph.graph_input_reads(id);
  for (const std::uint32_t guest : graph.guests(id)) outside += graph.graph_input_reads(guest);
  from.insert(from.end(), outside, std::uint64_t{0});
  std::sort(from.begin(), from.end());
}

// The token of `unit`: its nodes in graph order, each by op type and where its inputs come
// from (sources()); and, for a group, its op counts in summary order (FoldGraph::order_summary; a
// node's are its op: Unit::ops stays empty, sparing a vector per node). `ids` and `from` are
// the caller's, reused.
void describe(const FoldGraph& graph, Unit& unit, std::vector<std::uint32_t>& ids,
              std::vector<std::uint64_t>& from) {
  ids.clear();
  for_each_node(graph, unit, [&](std::uint32_t id) { ids.push_back(id); });
  std::sort(ids.begin(), ids.end());
  std::uint64_t token = mix(0, ids.size());
  for (const std::uint32_t id : ids) {
    if (!unit.node) count_op(unit.ops, graph.op(id), 1);
    token = mix(token, graph.op(id));
    sources(graph, id, ids, from);
    for (const std::uint64_t f : from) token = mix(token, f);
  }
  unit.token = token;
  if (!unit.node) graph.order_summary(unit.ops);
}

// The units of `prefix` in path order: runs of paths with the same next segment.
std::vector<Unit> group_by_segment(const FoldGraph& graph, const std::string& prefix) {
  const auto [lo, hi] = graph.path_range(prefix);
  std::vector<Unit> units;
  for (std::size_t k = lo; k < hi;) {
    const std::string_view segment = next_segment(graph.path(graph.by_path(k)), prefix.size());
    std::size_t end = k;
    Unit unit;
    unit.first = UINT32_MAX;
    for (; end < hi && next_segment(graph.path(graph.by_path(end)), prefix.size()) == segment;
         ++end) {
      const std::uint32_t id = graph.by_path(end);
      if (!graph.drawn(id)) continue;
      ++unit.nodes;
      unit.first = std::min(unit.first, id);
    }
    if (unit.nodes > 0) {
      unit.name = segment.empty() ? "(" + prefix + ")" : std::string(segment);
      unit.prefix = prefix + std::string(segment);
      unit.path_begin = k;
      unit.path_end = end;
      if (unit.nodes == 1) {
        unit.node = unit.first;
        if (segment.find_first_of("./") == std::string_view::npos) {
          unit.name = graph.label(unit.first);
        }
      }
      units.push_back(std::move(unit));
    }
    k = end;
  }
  return units;
}

// The children of `prefix`, passed through levels of a single group.
std::vector<Unit> children(const FoldGraph& graph, std::string& prefix) {
  std::vector<Unit> units = group_by_segment(graph, prefix);
  for (const Unit* group; (group = only_group(units, 0, units.size(), prefix));) {
    prefix = group->prefix;
    units = group_by_segment(graph, prefix);
  }
  return units;
}

// Appends the children of group `unit` to `into`, each named by its path after `level` (the
// prefix of the level they are units of).
void open_group(const FoldGraph& graph, const Unit& unit, const std::string& level,
                std::vector<Unit>& into) {
  std::string inner = unit.prefix;
  for (Unit& child : children(graph, inner)) {
    if (!child.node || child.prefix.back() == '.' || child.prefix.back() == '/') {
      child.name = child.prefix.substr(level.size());
    }
    into.push_back(std::move(child));
  }
}

// Opens each group u of `units` where open(u) (open_group); whether one was.
template <typename F>
bool open_groups(const FoldGraph& graph, const std::string& level, std::vector<Unit>& units,
                 F&& open) {
  std::vector<bool> opens(units.size());
  for (std::size_t u = 0; u < units.size(); ++u) opens[u] = !units[u].node && open(u);
  if (std::find(opens.begin(), opens.end(), true) == opens.end()) return false;
  std::vector<Unit> kept;
  for (std::size_t u = 0; u < units.size(); ++u) {
    if (opens[u]) {
      open_group(graph, units[u], level, kept);
    } else {
      kept.push_back(std::move(units[u]));
    }
  }
  units = std::move(kept);
  return true;
}

// Whether the drawn nodes of a group are convex: a walk from their successors outside the
// group, over nodes placed before the group's last, never comes back into it. `stamp` marks
// the group's members (member[id] == stamp) and the nodes walked (seen[id] == stamp).
class ConvexCheck {
 public:
  explicit ConvexCheck(const FoldGraph& graph)
      : graph_(graph), member_(graph.size(), 0), seen_(graph.size(), 0) {}

  bool operator()(const Unit& unit) {
    ++stamp_;
    std::uint32_t last = 0;
    for_each_node(graph_, unit, [&](std::uint32_t id) {
      member_[id] = stamp_;
      last = std::max(last, graph_.position(id));
    });
    std::vector<std::uint32_t> todo;
    const auto step = [&](std::uint32_t from) {
      for (const std::uint32_t s : graph_.successors(from)) {
        if (member_[s] == stamp_ || seen_[s] == stamp_ || graph_.position(s) > last) continue;
        seen_[s] = stamp_;
        todo.push_back(s);
      }
    };
    for_each_node(graph_, unit, step);
    while (!todo.empty()) {
      const std::uint32_t at = todo.back();
      todo.pop_back();
      for (const std::uint32_t s : graph_.successors(at)) {
        if (member_[s] == stamp_) return false;
      }
      step(at);
    }
    return true;
  }

 private:
  const FoldGraph& graph_;
  std::vector<std::uint32_t> member_, seen_;
  std::uint32_t stamp_ = 0;
};

// `units` in a topological order of the edges between them (Kahn's, the smallest first node
// first among those ready), and whether they make a DAG; where they do not, `on_cycle` marks
// the units that both reach and are reached from a cycle (the others placed before them).
bool order_units(const FoldGraph& graph, std::vector<Unit>& units, std::vector<bool>& on_cycle) {
  const std::size_t m = units.size();
  // By first node; where that order is topological already it is Kahn's (the smallest order
  // by first node of all the topological ones), and the common case costs one pass.
  std::vector<std::uint32_t> by_first(m);
  std::iota(by_first.begin(), by_first.end(), 0);
  std::sort(by_first.begin(), by_first.end(),
            [&](std::uint32_t a, std::uint32_t b) { return units[a].first < units[b].first; });
  std::vector<Unit> sorted_units;
  sorted_units.reserve(m);
  for (const std::uint32_t u : by_first) sorted_units.push_back(std::move(units[u]));
  UnitList list{"", std::move(sorted_units)};
  const auto edges = unit_edges(graph, list, 0, m);
  units = std::move(list.units);
  on_cycle.assign(m, false);
  if (std::all_of(edges.begin(), edges.end(), [](const auto& e) { return e.first < e.second; })) {
    return true;
  }
  const auto kahn = [&](bool forward) {
    return topological_order(m, edges, forward, [&](std::uint32_t a, std::uint32_t b) {
      return units[a].first < units[b].first;
    });
  };
  std::vector<std::uint32_t> order = kahn(true);
  if (order.size() < m) {
    std::vector<bool> placed(m, false), backward(m, false);
    for (const std::uint32_t u : order) placed[u] = true;
    for (const std::uint32_t u : kahn(false)) backward[u] = true;
    for (std::uint32_t u = 0; u < m; ++u) {
      on_cycle[u] = !placed[u] && !backward[u];
      if (!placed[u]) order.push_back(u);
    }
  }
  std::vector<Unit> sorted;
  std::vector<bool> sorted_on_cycle;
  sorted.reserve(m);
  for (const std::uint32_t u : order) {
    sorted.push_back(std::move(units[u]));
    sorted_on_cycle.push_back(on_cycle[u]);
  }
  units = std::move(sorted);
  on_cycle = std::move(sorted_on_cycle);
  return std::none_of(on_cycle.begin(), on_cycle.end(), [](bool c) { return c; });
}

// Opens the groups that are not convex, then those that close a cycle between units, until
// none is left to open.
void settle(const FoldGraph& graph, const std::string& prefix, std::vector<Unit>& units) {
  ConvexCheck convex(graph);
  std::vector<bool> on_cycle;  // see order_units
  for (bool changed = true; changed;) {
    changed = open_groups(graph, prefix, units, [&](std::size_t u) { return !convex(units[u]); });
    if (changed || order_units(graph, units, on_cycle)) continue;
    changed = open_groups(graph, prefix, units, [&](std::size_t u) { return on_cycle[u]; });
  }
}

// The first level's wrapper: where it has kWrapperUnits units or fewer, the group of
// kWrapperNodes nodes or more holding two thirds of them (a model's `model.` beside its head,
// then its layers beside the embedding and the norm); units.size() where there is none. Small
// models keep their groups: a few nodes need no opening.
std::size_t wrapper_group(const std::vector<Unit>& units) {
  constexpr std::size_t kWrapperUnits = 5, kWrapperNodes = 16;
  if (units.size() > kWrapperUnits) return units.size();
  std::size_t nodes = 0, largest = 0;
  for (std::size_t u = 0; u < units.size(); ++u) {
    nodes += units[u].nodes;
    if (units[u].nodes > units[largest].nodes) largest = u;
  }
  const bool wraps = !units.empty() && units[largest].nodes >= kWrapperNodes &&
                     3 * units[largest].nodes >= 2 * nodes;
  return wraps ? largest : units.size();
}

}  // namespace

void count_op(std::vector<std::pair<std::uint32_t, std::uint32_t>>& ops, std::uint32_t op,
              std::uint32_t count) {
  const auto found =
      std::find_if(ops.begin(), ops.end(), [op](const auto& entry) { return entry.first == op; });
  if (found == ops.end()) {
    ops.emplace_back(op, count);
  } else {
    found->second += count;
  }
}

const Unit* only_group(const std::vector<Unit>& units, std::size_t begin, std::size_t end,
                       const std::string& prefix) {
  const bool one = end - begin == 1 && !units[begin].node && units[begin].prefix != prefix;
  return one ? &units[begin] : nullptr;
}

std::size_t memo_bytes(const UnitList& list) {
  std::size_t bytes = sizeof(UnitList) + list.prefix.size();
  for (const Unit& unit : list.units) {
    bytes += sizeof(Unit) + unit.prefix.capacity() + unit.name.capacity() +
             unit.ops.capacity() * sizeof(unit.ops[0]);
  }
  return bytes;
}

UnitList units_at(const FoldGraph& graph, std::string prefix) {
  const bool first_level = prefix.empty();
  std::vector<Unit> units = children(graph, prefix);
  settle(graph, prefix, units);
  bool wrapped = false;
  // The first level's wrappers are opened: the first screen shows what they hold.
  for (std::size_t w = first_level ? wrapper_group(units) : units.size(); w < units.size();
       w = wrapper_group(units)) {
    (void)open_groups(graph, prefix, units, [w](std::size_t u) { return u == w; });
    settle(graph, prefix, units);
    wrapped = true;
  }
  std::vector<std::uint32_t> ids;
  std::vector<std::uint64_t> from;
  for (Unit& unit : units) describe(graph, unit, ids, from);
  // With a wrapper opened, the level is the first one's only: its ids name it by "", not by the
  // prefix passed through (whose own level opens no wrapper).
  return {wrapped ? std::string() : std::move(prefix), std::move(units)};
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> unit_edges(const FoldGraph& graph,
                                                                const UnitList& list,
                                                                std::size_t begin,
                                                                std::size_t end) {
  std::vector<std::int32_t> unit_of(graph.size(), -1);
  for (std::size_t u = begin; u < end; ++u) {
    for_each_node(graph, list.units[u],
                  [&](std::uint32_t id) { unit_of[id] = static_cast<std::int32_t>(u); });
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::size_t u = begin; u < end; ++u) {
    for_each_node(graph, list.units[u], [&](std::uint32_t id) {
      graph.for_each_input(id, [&](std::uint32_t producer, std::string_view) {
        const std::int32_t from = unit_of[graph.host(producer)];
        if (from >= 0 && static_cast<std::size_t>(from) != u) {
          edges.emplace_back(static_cast<std::uint32_t>(from), static_cast<std::uint32_t>(u));
        }
      });
    });
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  return edges;
}

}  // namespace onnxmap::cli::viewer
