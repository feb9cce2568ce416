#pragma once
// How many elements hold each bit pattern, for the types of at most 16 bits: everything their
// statistics need (stats_from_patterns), and integer counts, so that counts of the parts of a
// tensor, counted on any threads, add up to exactly the counts of the whole.

#include <cstddef>
#include <cstdint>
#include <span>

#include "onnxmap/schema.hpp"
#include "onnxmap/stats.hpp"

namespace onnxmap::detail {

// Whether `count` elements of `type` are counted by bit pattern: types of at most 16 bits, once
// the elements outnumber a quarter of the patterns (before that, 64 float16 values of a norm,
// zeroing 65536 counters would cost more than the values).
[[nodiscard]] bool counted_by_pattern(DataType type, std::uint64_t count) noexcept;

// Adds to counts[k] how many of elements [first, last) of the elements at `p` (`bits` 16, 8, 4
// or 2 each, the raw_data layout) have bit pattern k. `counts` has 2^bits entries. Safe to call
// from several threads at once with different `counts`.
void add_patterns(const std::byte* p, std::uint64_t first, std::uint64_t last, std::uint64_t bits,
                  std::span<std::uint64_t> counts);

// The statistics of `count` elements of `type` whose bit patterns `counts` counted (2^bits
// entries), as tensor_stats gives them.
[[nodiscard]] TensorStats stats_from_patterns(std::span<const std::uint64_t> counts, DataType type,
                                              std::uint64_t count, unsigned bins);

}  // namespace onnxmap::detail
