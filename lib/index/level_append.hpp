#pragma once
// Appends what the chunks of one level of the indexing pass found to the index's tables, in file
// order, so that the index is the same however the level was cut and on however many threads.

#include <cstdint>
#include <deque>

#include "index/chunk_feed.hpp"
#include "index/level_output.hpp"

namespace onnxmap::detail {

// What a level's scan found of the next level: the sum of its records' scan_weight()s, and how
// many of them are tensors (LevelOutput::tensor_children).
struct LevelSums {
  std::uint64_t weight = 0;
  std::uint32_t tensors = 0;
};

// Room in the index's table, past its end, for every child the records of the level
// [begin, end of the table) could have (each is a field of at least two bytes of its parent;
// `weight` is the level's LevelSums::weight), and a window over it: a thread can scan the level's
// first chunks there, in place, while the others read the table's records. The table may move
// before the window is made, never after. Empty where that room is refused, or large where
// reserving it is not free (reserved_room_is_free()).
[[nodiscard]] PodTable<MessageRecord> children_window(ModelIndex& index, std::uint32_t begin,
                                                      std::uint64_t weight);

// Appends what `results` (one per chunk, in file order) mark in their outputs: the children get
// ids after every record so far, and each scanned record learns where its children begin. The
// tables grow once, and the parts are copied into them on up to `threads` threads, the dims of the
// tensors the chunks wrote renumbered to match; the merged spans and payload errors are moved out
// of the outputs. Returns the new level's sums.
LevelSums append_level(ModelIndex& index, const std::deque<LevelChunk>& chunks,
                       const std::deque<ChunkResult>& results, unsigned threads);

// Ends a level [begin, end) scanned on one thread straight into the index (its children
// appended to the index's records, its tensors' dims to the index's): each record learns where
// its children begin, and `out`'s lists (ids in the index's numbering) join the index's. Returns
// the new level's sums.
LevelSums finish_level_in_place(ModelIndex& index, std::uint32_t begin, std::uint32_t end,
                                LevelOutput& out);

// A record split into runs got its children in wire order; puts them in field order. `level_end`
// is where the level of the split records ends.
void sort_split_records(ModelIndex& index, const std::deque<LevelChunk>& chunks,
                        const std::deque<ChunkResult>& results, std::uint32_t level_end);

}  // namespace onnxmap::detail
