#pragma once
// Appends what the chunks of one level of the indexing pass found to the index's tables, in file
// order, so that the index is the same however the level was cut and on however many threads.

#include <cstdint>
#include <deque>

#include "index/chunk_feed.hpp"
#include "index/level_output.hpp"

namespace onnxmap::detail {

// Appends what `results` (one per chunk, in file order) mark in their outputs: the children get
// ids after every record so far, and each scanned record learns where its children begin. The
// tables grow once, and the parts are copied into them on up to `threads` threads; the merged
// spans are moved out of the outputs. Returns the new level's weight (the sum of its records'
// scan_weight()s).
std::uint64_t append_level(ModelIndex& index, const std::deque<LevelChunk>& chunks,
                           const std::deque<ChunkResult>& results, unsigned threads);

// Ends a level [begin, end) scanned on one thread straight into the index (its children
// appended to the index's records, its tensors to the index's tensor tables): each record learns
// where its children begin, and `out`'s lists (ids in the index's numbering) join the index's.
// Returns the new level's weight.
std::uint64_t finish_level_in_place(ModelIndex& index, std::uint32_t begin, std::uint32_t end,
                                    LevelOutput& out);

// A record split into runs got its children in wire order; puts them in field order. `level_end`
// is where the level of the split records ends.
void sort_split_records(ModelIndex& index, const std::deque<LevelChunk>& chunks,
                        const std::deque<ChunkResult>& results, std::uint32_t level_end);

}  // namespace onnxmap::detail
