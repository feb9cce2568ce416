// The units of a name prefix (graph_units.hpp).

#include "graph_units.hpp"

#include <algorithm>

#include "tensor_list.hpp"

namespace onnxmap::cli::viewer {

namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t value) {
  h ^= value + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

// The token of `unit`: its nodes in graph order, each by op type and where its inputs come
// from (a node of the unit by its place, or outside); and, for a group, its op counts, most
// common first (a node's are its op: Unit::ops stays empty, sparing a vector per node).
void describe(const NodeGraph& graph, Unit& unit) {
  if (unit.node) {
    std::uint64_t token = mix(mix(0, 1), graph.op(*unit.node));
    graph.for_each_input(*unit.node, [&](std::uint32_t producer, std::string_view) {
      token = mix(token, graph.host(producer) == *unit.node ? 1 : 0);
    });
    unit.token = token;
    return;
  }
  std::vector<std::uint32_t> ids;
  for_each_node(graph, unit, [&](std::uint32_t id) { ids.push_back(id); });
  std::sort(ids.begin(), ids.end());
  std::uint64_t token = mix(0, ids.size());
  for (const std::uint32_t id : ids) {
    const std::uint32_t op = graph.op(id);
    const auto counted = std::find_if(unit.ops.begin(), unit.ops.end(),
                                      [op](const auto& entry) { return entry.first == op; });
    if (counted == unit.ops.end()) {
      unit.ops.emplace_back(op, 1);
    } else {
      ++counted->second;
    }
    token = mix(token, op);
    graph.for_each_input(id, [&](std::uint32_t producer, std::string_view) {
      const std::uint32_t from = graph.host(producer);
      const auto at = std::lower_bound(ids.begin(), ids.end(), from);
      token = mix(token, at != ids.end() && *at == from ? at - ids.begin() + 1 : 0);
    });
  }
  unit.token = token;
  std::stable_sort(unit.ops.begin(), unit.ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
}

// The units of `prefix` in key order: runs of keys with the same next segment.
std::vector<Unit> group_by_segment(const NodeGraph& graph, const std::string& prefix) {
  const auto [lo, hi] = graph.key_range(prefix);
  std::vector<Unit> units;
  for (std::size_t k = lo; k < hi;) {
    const std::string_view segment = next_segment(graph.key(graph.by_key(k)), prefix.size());
    std::size_t end = k;
    Unit unit;
    unit.first = UINT32_MAX;
    for (; end < hi && next_segment(graph.key(graph.by_key(end)), prefix.size()) == segment;
         ++end) {
      const std::uint32_t id = graph.by_key(end);
      if (!graph.drawn(id)) continue;
      ++unit.nodes;
      unit.first = std::min(unit.first, id);
    }
    if (unit.nodes > 0) {
      unit.name = segment.empty() ? "(" + prefix + ")" : std::string(segment);
      unit.prefix = prefix + std::string(segment);
      unit.key_begin = k;
      unit.key_end = end;
      if (unit.nodes == 1) unit.node = unit.first;
      units.push_back(std::move(unit));
    }
    k = end;
  }
  return units;
}

}  // namespace

std::size_t memo_bytes(const UnitList& list) {
  std::size_t bytes = sizeof(UnitList) + list.prefix.size();
  for (const Unit& unit : list.units) {
    bytes += sizeof(Unit) + unit.prefix.capacity() + unit.name.capacity() +
             unit.ops.capacity() * sizeof(unit.ops[0]);
  }
  return bytes;
}

UnitList units_at(const NodeGraph& graph, std::string prefix) {
  std::vector<Unit> units = group_by_segment(graph, prefix);
  while (units.size() == 1 && !units.front().node && units.front().prefix != prefix) {
    prefix = units.front().prefix;
    units = group_by_segment(graph, prefix);
  }
  for (Unit& unit : units) describe(graph, unit);
  std::sort(units.begin(), units.end(),
            [](const Unit& a, const Unit& b) { return a.first < b.first; });
  return {std::move(prefix), std::move(units)};
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> unit_edges(const NodeGraph& graph,
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
