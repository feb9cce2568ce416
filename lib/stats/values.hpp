#pragma once
// Element values in the raw_data layout, as the statistics read them: one decoder per type, a
// table by bit pattern for the types of at most 16 bits, and the checks every entry point makes.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <vector>

#include "onnxmap/schema.hpp"
#include "onnxmap/stats.hpp"

namespace onnxmap::detail {

[[nodiscard]] inline unsigned byte_at(const std::byte* p, std::uint64_t i) {
  return std::to_integer<unsigned>(p[i]);
}

// The bit pattern of element i of a type of `bits` (16, 8, 4 or 2) bits; sub-byte elements
// from the low bits of each byte up.
[[nodiscard]] inline unsigned pattern_at(const std::byte* p, std::uint64_t i, std::uint64_t bits) {
  if (bits == 16) return byte_at(p, 2 * i) | byte_at(p, 2 * i + 1) << 8U;
  if (bits == 8) return byte_at(p, i);
  const std::uint64_t per_byte = 8 / bits;
  return (byte_at(p, i / per_byte) >> (bits * (i % per_byte))) & ((1U << bits) - 1);
}

// Every value of a type of at most 16 bits by bit pattern (NaN and infinity patterns as
// onnx.proto defines them), decoded once per process; empty for the wider types.
[[nodiscard]] const std::vector<double>& values_by_pattern(DataType type);

// Throws onnxmap::Error (invalid_argument) for a type has_stats refuses, or `bytes` too short for
// `count` elements of `type`.
void check_values(std::span<const std::byte> bytes, DataType type, std::uint64_t count);

// tensor_stats (stats.hpp), asking `cancelled` (when set) between blocks of a few million
// elements and throwing onnxmap::Error (cancelled) when it answers true: a billion values take
// seconds, and plan_stats counts a tensor of a type wider than 16 bits whole once it has landed.
[[nodiscard]] TensorStats tensor_stats_until(std::span<const std::byte> bytes, DataType type,
                                             std::uint64_t count, unsigned bins,
                                             const std::function<bool()>& cancelled);

template <class T>
[[nodiscard]] double load_as_double(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<double>(v);
}

// Calls use(decode) with the decoder of `type`: decode(p, i) is element i of the elements at p,
// as a double. One instantiation per wide type, and one per width of the others, which look
// their values up by bit pattern.
template <class Use>
void with_decoder(DataType type, Use&& use) {
  using D = DataType;
  switch (type) {
    case D::float32:
      return use([](const std::byte* p, auto i) { return load_as_double<float>(p + 4 * i); });
    case D::float64:
      return use([](const std::byte* p, auto i) { return load_as_double<double>(p + 8 * i); });
    case D::int32:
      return use(
          [](const std::byte* p, auto i) { return load_as_double<std::int32_t>(p + 4 * i); });
    case D::uint32:
      return use(
          [](const std::byte* p, auto i) { return load_as_double<std::uint32_t>(p + 4 * i); });
    case D::int64:
      return use(
          [](const std::byte* p, auto i) { return load_as_double<std::int64_t>(p + 8 * i); });
    case D::uint64:
      return use(
          [](const std::byte* p, auto i) { return load_as_double<std::uint64_t>(p + 8 * i); });
    default: break;
  }
  const double* table = values_by_pattern(type).data();
  const std::uint64_t bits = element_bits(type);
  if (bits == 16) {
    return use([table](const std::byte* p, auto i) { return table[pattern_at(p, i, 16)]; });
  }
  if (bits == 8) {
    return use([table](const std::byte* p, auto i) { return table[byte_at(p, i)]; });
  }
  use([table, bits](const std::byte* p, auto i) { return table[pattern_at(p, i, bits)]; });
}

// Calls f(value) for each of the `count` elements of `type` at `p`.
template <class F>
void for_each_value(const std::byte* p, DataType type, std::uint64_t count, F&& f) {
  with_decoder(type, [&](auto decode) {
    for (std::uint64_t i = 0; i < count; ++i) f(decode(p, i));
  });
}

}  // namespace onnxmap::detail
