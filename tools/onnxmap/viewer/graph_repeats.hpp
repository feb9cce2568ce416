#pragma once
// Repeated structure and ranges: how a level's units become at most about kMaxBoxes boxes
// (graph_level.hpp).

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "graph_level.hpp"

namespace onnxmap::cli::viewer {

using UnitEdges = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

// The units of `level` as items: each longest run of COUNT >= 2 consecutive blocks of PERIOD
// units that have equal tokens, the same edges inside each block, and an edge from each block
// into the next, one repeat item (runs that save at least two boxes, the largest saving first);
// the other units one item each. `edges`: unit_edges() of the level.
[[nodiscard]] std::vector<Item> fold_repeats(const Level& level, const UnitEdges& edges);

// On a level of more than kSinglesShown single-node items beside groups or repeats, each run of
// kSingleRun or more consecutive ones gathered into one range: the plumbing a wrapper computes
// node by node beside its modules (an attention mask built from the input's shape) reads as one
// box, not dozens. A level of single nodes alone stays as it is (structure, or kMaxBoxes,
// decides). A run of consecutive units of the level's topological order: the range is convex.
inline constexpr std::size_t kSinglesShown = 20, kSingleRun = 4;
[[nodiscard]] std::vector<Item> gather_single_runs(std::vector<Item> items);

// More than kMaxBoxes items, or items wired too densely to lay out quickly, gathered into at
// most kMaxBoxes consecutive ranges of about equal size, each cut moved (by up to 15% of a
// range) to where the fewest edges cross it; other items returned as they are.
[[nodiscard]] std::vector<Item> cut_into_ranges(const Level& level, const UnitEdges& edges,
                                                std::vector<Item> items);

}  // namespace onnxmap::cli::viewer
