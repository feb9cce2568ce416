// Counting elements by bit pattern (patterns.hpp): the inner loop of the statistics of every
// float16, bfloat16, 8-bit and 4-bit tensor.

#include "stats/patterns.hpp"

#include <algorithm>
#include <vector>

#include "io/fault_guard.hpp"
#include "stats/values.hpp"

namespace onnxmap::detail {

namespace {

constexpr std::size_t kTable = std::size_t{1} << 16U;

// This thread's counters: two tables taking turns, so that equal neighbours do not wait on one
// counter's last increment; 32 bits each (half the cache of 64-bit ones). All zero between calls.
std::uint32_t* scratch() {
  thread_local std::vector<std::uint32_t> tables(2 * kTable);
  return tables.data();
}

unsigned le16(const std::byte* p) {
  return byte_at(p, 0) | byte_at(p, 1) << 8U;
}

// 16-bit elements [begin, end), eight a step, counted in the order 0 1 4 5 2 3 6 7: counters of
// neighbours that follow a stride (synth's payloads) then do not collide in the store queue,
// which costs the straight order a third on such data and nothing on real weights.
void count16(const std::byte* p, std::uint64_t begin, std::uint64_t end, std::uint32_t* even,
             std::uint32_t* odd) {
  std::uint64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const std::byte* q = p + 2 * i;
    ++even[le16(q)];
    ++odd[le16(q + 2)];
    ++even[le16(q + 8)];
    ++odd[le16(q + 10)];
    ++even[le16(q + 4)];
    ++odd[le16(q + 6)];
    ++even[le16(q + 12)];
    ++odd[le16(q + 14)];
  }
  for (; i < end; ++i) ++even[le16(p + 2 * i)];
}

void count8(const std::byte* p, std::uint64_t begin, std::uint64_t end, std::uint32_t* even,
            std::uint32_t* odd) {
  std::uint64_t i = begin;
  for (; i + 2 <= end; i += 2) {
    ++even[byte_at(p, i)];
    ++odd[byte_at(p, i + 1)];
  }
  if (i < end) ++even[byte_at(p, i)];
}

}  // namespace

bool counted_by_pattern(DataType type, std::uint64_t count) noexcept {
  const std::uint64_t bits = element_bits(type);
  return has_stats(type) && bits <= 16 && count >= (std::uint64_t{1} << bits) / 4;
}

void add_patterns(const std::byte* p, std::uint64_t first, std::uint64_t last, std::uint64_t bits,
                  std::span<std::uint64_t> counts) {
  const std::size_t patterns = std::size_t{1} << bits;
  // The bytes read, whose faults (a mapped file that shrank) become errors.
  const std::span<const std::byte> bytes(
      p + first * bits / 8, static_cast<std::size_t>((last * bits + 7) / 8 - first * bits / 8));
  // A few elements are counted straight into the totals: the tables would cost more to add up.
  if (bits < 8 || last - first < patterns / 4) {
    guard_faults(bytes, [&]() noexcept {
      for (std::uint64_t i = first; i < last; ++i) ++counts[pattern_at(p, i, bits)];
    });
    return;
  }
  // Runs of at most 2^31 elements, so that no 32-bit counter overflows.
  constexpr std::uint64_t kRun = std::uint64_t{1} << 31U;
  std::uint32_t* even = scratch();
  std::uint32_t* odd = even + kTable;
  for (std::uint64_t begin = first; begin < last; begin += kRun) {
    const std::uint64_t end = std::min(last, begin + kRun);
    try {
      guard_faults(bytes, [&]() noexcept {
        if (bits == 16) {
          count16(p, begin, end, even, odd);
        } else {
          count8(p, begin, end, even, odd);
        }
      });
    } catch (const Error&) {
      // The tables are zero between calls, also after a fault midway.
      std::fill(even, even + patterns, 0);
      std::fill(odd, odd + patterns, 0);
      throw;
    }
    for (std::size_t k = 0; k < patterns; ++k) counts[k] += std::uint64_t{even[k]} + odd[k];
    std::fill(even, even + patterns, 0);
    std::fill(odd, odd + patterns, 0);
  }
}

}  // namespace onnxmap::detail
