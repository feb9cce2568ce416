#pragma once
// The boxes of one level of the graph page, and what their ids (box_id.hpp) name. A level is a
// range of the units of a prefix (graph_units.hpp); its boxes are its units, with runs of
// repeated blocks (the same ops and wiring, each feeding the next: a transformer layer, a
// residual block) folded into one box "x N", and, where more than kMaxBoxes remain, consecutive
// boxes gathered into ranges cut where the fewest values cross.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "box_id.hpp"
#include "fold_cache.hpp"
#include "graph_units.hpp"

namespace onnxmap::cli::viewer {

inline constexpr std::size_t kMaxBoxes = 150;

enum class ItemKind { node, group, repeat, range };

struct Item {
  ItemKind kind = ItemKind::node;
  BoxId id;                        // its box id
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

// A graph's folding: the graph, and the units of each prefix and the boxes of each level as
// computed of it, kept (fold_cache.hpp). Any number of threads may use it; the graph must
// outlive it.
class Folding {
 public:
  explicit Folding(const FoldGraph& graph) : graph_(graph) {}
  [[nodiscard]] const FoldGraph& graph() const { return graph_; }
  // units_at(graph(), prefix).
  [[nodiscard]] std::shared_ptr<const UnitList> units(const std::string& prefix) const;
  // The boxes of `level`, in graph order. A group whose own level is one run of repeated
  // blocks is that run's box (its id names the group's units).
  [[nodiscard]] std::shared_ptr<const std::vector<Item>> items(const Level& level) const;

 private:
  const FoldGraph& graph_;
  mutable FoldCache cache_;
};

// About the memory `items` holds (Folding keeps it).
[[nodiscard]] std::size_t memo_bytes(const std::vector<Item>& items);

// `text` as a box id; throws ApiError (400) where it is not spelled as one.
[[nodiscard]] BoxId box_id_or_400(std::string_view text);

// The units `id` names: a group's level, a range, the block shown of a run. Throws ApiError
// (400) for a node or an id out of range, (404) for a prefix with no node under it.
[[nodiscard]] Level resolve(const Folding& folding, const BoxId& id);

// What the box `id` unfolds to: resolve(), passed through a level of one group (only_group).
[[nodiscard]] Level unfold(const Folding& folding, const BoxId& id);

// The blocks of run `id` (resolve() checks it), each by the name of its first unit; none where
// it has more than kMaxBoxes blocks.
[[nodiscard]] std::vector<std::string> block_names(const Folding& folding, const BoxId& id);

// The ids to unfold, from `root` down, to show node `id` (or the node it is drawn inside) as a
// box of its own; the last is the node's box id.
[[nodiscard]] std::vector<BoxId> path_to_node(const Folding& folding, const BoxId& root,
                                              std::uint32_t id);

}  // namespace onnxmap::cli::viewer
