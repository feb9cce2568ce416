#pragma once
// The boxes of one level of the graph page, and the ids that name them in the API and the
// page's URL. A level is a range of the units of a prefix (graph_units.hpp); its boxes are its
// units, with runs of repeated blocks (the same ops and wiring, each feeding the next: a
// transformer layer, a residual block) folded into one box "x N", and, where more than
// kMaxBoxes remain, consecutive boxes gathered into ranges cut where the fewest values cross.
//
// Box ids: "g:PREFIX" a group, "n:ID" a node, "r:BEGIN:PERIOD:COUNT:SHOWN:PREFIX" COUNT
// blocks of PERIOD units from unit BEGIN of PREFIX (unfolded: the block SHOWN),
// "k:BEGIN:END:PREFIX" the units [BEGIN, END) of PREFIX.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph_units.hpp"

namespace onnxmap::cli::viewer {

inline constexpr std::size_t kMaxBoxes = 150;

enum class ItemKind { node, group, repeat, range };

struct Item {
  ItemKind kind = ItemKind::node;
  std::string id;                  // its box id
  std::size_t begin = 0, end = 0;  // its units in the level
  std::size_t period = 0;          // repeat: units per block
  std::size_t count = 0;           // repeat: blocks
  std::string title;               // what its box is called
  std::string first, last;         // the names of its first and last unit (repeat: block)
  std::uint32_t nodes = 0;         // drawn nodes in it
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ops;  // (op, count): order_summary
};

// A level: the units [begin, end) of `list` (shared: the units of a prefix are kept).
struct Level {
  std::shared_ptr<const UnitList> list;
  std::size_t begin = 0, end = 0;
  [[nodiscard]] const std::vector<Unit>& units() const { return list->units; }
  [[nodiscard]] const std::string& prefix() const { return list->prefix; }
};

// The boxes of `level`, in graph order. A group whose own level is one run of repeated blocks
// is that run's box (its id names the group's units). Kept (NodeGraph::memo) per level.
[[nodiscard]] std::shared_ptr<const std::vector<Item>> items_of(const NodeGraph& graph,
                                                                const Level& level);

// About the memory `items` holds (NodeGraph::memo).
[[nodiscard]] std::size_t memo_bytes(const std::vector<Item>& items);

// What the box `id` unfolds to; "g:" is the whole graph. Throws ApiError (400) for an id that
// is malformed or out of range, and (404) for a node or prefix that is not there.
[[nodiscard]] Level unfold(const NodeGraph& graph, const std::string& id);

// What `id` names, without passing through a level of one group as unfold() does.
[[nodiscard]] Level parse(const NodeGraph& graph, const std::string& id);

// A run of repeated blocks as an id "r:..." names it: the blocks are the units
// [begin + k * period, begin + (k + 1) * period) of `list` for k < count.
struct Run {
  std::shared_ptr<const UnitList> list;
  std::size_t begin = 0, period = 0, count = 0, shown = 0;
};
// Throws ApiError (400) where `id` is not a run's id or is out of range.
[[nodiscard]] Run parse_run(const NodeGraph& graph, const std::string& id);

// The blocks of `run`, each by the name of its first unit; none where it has more than
// kMaxBoxes blocks.
[[nodiscard]] std::vector<std::string> block_names(const Run& run);

// Throws ApiError (400) unless `id` is spelled as a box id (whether it names a box or not).
void check_id(const std::string& id);

// Whether `id` names a box that unfolds (not a node).
[[nodiscard]] bool unfolds(const std::string& id);

// The ids to unfold, from `root` down, to show node `id` (or the node it is drawn inside) as a
// box of its own; the last is the node's box id.
[[nodiscard]] std::vector<std::string> path_to_node(const NodeGraph& graph, const std::string& root,
                                                    std::uint32_t id);

}  // namespace onnxmap::cli::viewer
