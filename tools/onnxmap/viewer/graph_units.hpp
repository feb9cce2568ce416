#pragma once
// What the graph page folds: the children of a path prefix ("units"), each a group of nodes
// whose fold paths (FoldGraph::path) continue the prefix to the next `.` or `/`, or one node;
// nodes drawn inside another (FoldGraph::host) are not units. A group is a unit only if it is
// convex (no path of the graph leaves it and comes back); one that is not is opened into its
// children, and so are groups that would close a cycle between units, so that the units of a
// level, in the order they come in, are a topological order of a DAG: every range of
// consecutive units is convex too. Units carry a token that is equal for units of the same ops
// and wiring, from which repeated structure is found (graph_level.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fold_graph.hpp"

namespace onnxmap::cli::viewer {

struct Unit {
  std::string prefix;  // a group's prefix (its nodes' paths start with it); a node's path
  std::string name;    // a group: the part after the level's prefix; a node: its label
  std::size_t path_begin = 0, path_end = 0;  // its nodes: FoldGraph::by_path(k) for k in here
  std::uint32_t first = 0;                   // its first drawn node in graph order
  std::uint32_t nodes = 0;                   // its drawn nodes
  std::optional<std::uint32_t> node;         // the node, when it is one
  std::uint64_t token = 0;                   // equal for units of the same ops and wiring
  // A group's (op, count) in summary order (FoldGraph::order_summary); empty for a node (its op is
  // FoldGraph::op).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ops;
};

struct UnitList {
  std::string prefix;  // the prefix asked for, lengthened past levels of a single group
  std::vector<Unit> units;
};

// About the memory `list` holds (Folding keeps it).
[[nodiscard]] std::size_t memo_bytes(const UnitList& list);

// Adds `count` of `op` to the op counts `ops` (Unit::ops, Item::ops).
void count_op(std::vector<std::pair<std::uint32_t, std::uint32_t>>& ops, std::uint32_t op,
              std::uint32_t count);

// The one rule for passing through a level of one group, so that a chain of one-child levels
// costs no clicks: where units [begin, end) of a level of `prefix` are one group other than the
// prefix itself, that group (its own level is shown instead); else null.
[[nodiscard]] const Unit* only_group(const std::vector<Unit>& units, std::size_t begin,
                                     std::size_t end, const std::string& prefix);

// The units under `prefix`, in a topological order of the DAG they make (the unit with the
// smallest first node first among those ready). A prefix whose only child is a group is passed
// through to that group's children (only_group); so is a group opened (above) whose only child
// is a group.
[[nodiscard]] UnitList units_at(const FoldGraph& graph, std::string prefix);

// Calls f(id) for each drawn node of `unit`.
template <typename F>
void for_each_node(const FoldGraph& graph, const Unit& unit, F&& f) {
  if (unit.node) {
    f(*unit.node);
    return;
  }
  for (std::size_t k = unit.path_begin; k < unit.path_end; ++k) {
    const std::uint32_t id = graph.by_path(k);
    if (graph.drawn(id)) f(id);
  }
}

// Edges between units [begin, end) of `list`: (from, to) unit indices, each pair once, sorted.
[[nodiscard]] std::vector<std::pair<std::uint32_t, std::uint32_t>> unit_edges(
    const FoldGraph& graph, const UnitList& list, std::size_t begin, std::size_t end);

}  // namespace onnxmap::cli::viewer
