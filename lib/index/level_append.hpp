#pragma once
// Appends what the chunks of one level of the indexing pass found to the index's tables, in file
// order, so that the index is the same however the level was cut and on however many threads.

#include <cstdint>
#include <deque>

#include "index/chunk_feed.hpp"
#include "index/level_output.hpp"

namespace onnxmap::detail {

// Appends `outputs` (one per chunk, in file order): their children get ids after every record so
// far, and each scanned record learns where its children begin. The tables grow once, and the
// outputs are copied into them on up to `threads` threads. Returns the new level's weight (the
// sum of its records' scan_weight()s).
std::uint64_t append_level(ModelIndex& index, const std::deque<LevelChunk>& chunks,
                           std::deque<LevelOutput>& outputs, unsigned threads);

// A record split into runs got its children in wire order; puts them in field order. `level_end`
// is where the level of the split records ends.
void sort_split_records(ModelIndex& index, const std::deque<LevelChunk>& chunks,
                        const std::deque<LevelOutput>& outputs, std::uint32_t level_end);

}  // namespace onnxmap::detail
