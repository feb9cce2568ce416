#include "write/weight_compare.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "io/fault_guard.hpp"

namespace onnxmap::detail {

namespace {

constexpr std::size_t kSamples = 16;
constexpr std::size_t kSampleBytes = 16;  // of sampled_equal's windows
constexpr std::uint64_t kTile = 64;       // elements a side, of transposed_equal's tiles

std::uint64_t mix(std::uint64_t x) noexcept {  // splitmix64's finaliser
  x = (x ^ (x >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27U)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31U);
}

// The k-th of kSamples places among `count`: the first, the last, and spread between.
std::uint64_t sample_place(std::size_t k, std::uint64_t count) noexcept {
  if (k == 0) return 0;
  if (k == kSamples - 1) return count - 1;
  return mix(k) % count;
}

template <class Element>
bool transposed_equal_as(const std::byte* a, const std::byte* b, std::uint64_t rows,
                         std::uint64_t columns) noexcept {
  const auto at = [](const std::byte* base, std::uint64_t index) noexcept {
    Element value;
    std::memcpy(&value, base + index * sizeof(Element), sizeof(Element));
    return value;
  };
  // Tile by tile, so that both the rows of `a` and those of `b` are read a cache line at a time.
  for (std::uint64_t r0 = 0; r0 < rows; r0 += kTile) {
    for (std::uint64_t c0 = 0; c0 < columns; c0 += kTile) {
      const std::uint64_t r1 = std::min(rows, r0 + kTile);
      const std::uint64_t c1 = std::min(columns, c0 + kTile);
      for (std::uint64_t c = c0; c < c1; ++c) {
        for (std::uint64_t r = r0; r < r1; ++r) {
          if (at(a, r * columns + c) != at(b, c * rows + r)) return false;
        }
      }
    }
  }
  return true;
}

}  // namespace

std::uint64_t fingerprint(std::span<const std::byte> bytes, std::size_t element_size,
                          std::uint64_t transposed_rows) {
  const std::uint64_t count = bytes.size() / element_size;
  if (count == 0) return 0;
  const std::uint64_t columns = transposed_rows > 0 ? count / transposed_rows : 0;
  std::array<std::uint64_t, kSamples> values{};
  guard_faults(bytes, [&]() noexcept {
    for (std::size_t k = 0; k < kSamples; ++k) {
      std::uint64_t place = sample_place(k, count);
      // Element `place` of the transpose, a [columns, rows] matrix, is (place / rows, place %
      // rows) there: element (place % rows, place / rows) of the matrix itself.
      if (transposed_rows > 0) place = place % transposed_rows * columns + place / transposed_rows;
      std::memcpy(&values[k], bytes.data() + place * element_size, element_size);
    }
  });
  std::uint64_t hash = count;
  for (const std::uint64_t value : values) hash = mix(hash ^ value);
  return hash;
}

bool sampled_equal(std::span<const std::byte> a, std::span<const std::byte> b) {
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  bool equal = true;
  guard_faults(a, b, [&]() noexcept {
    for (std::size_t k = 0; k < kSamples && equal; ++k) {
      const std::uint64_t place = std::min(sample_place(k, a.size()), a.size() - 1);
      const std::uint64_t length = std::min<std::uint64_t>(kSampleBytes, a.size() - place);
      equal = std::memcmp(a.data() + place, b.data() + place, length) == 0;
    }
  });
  return equal;
}

bool transposed_equal(std::span<const std::byte> a, std::span<const std::byte> b,
                      std::size_t element_size, std::uint64_t rows) {
  if (a.size() != b.size() || rows == 0 || a.size() % (rows * element_size) != 0) return false;
  const std::uint64_t columns = a.size() / element_size / rows;
  bool equal = false;
  guard_faults(a, b, [&]() noexcept {
    switch (element_size) {
      case 1: equal = transposed_equal_as<std::uint8_t>(a.data(), b.data(), rows, columns); break;
      case 2: equal = transposed_equal_as<std::uint16_t>(a.data(), b.data(), rows, columns); break;
      case 4: equal = transposed_equal_as<std::uint32_t>(a.data(), b.data(), rows, columns); break;
      case 8: equal = transposed_equal_as<std::uint64_t>(a.data(), b.data(), rows, columns); break;
      default: equal = false;
    }
  });
  return equal;
}

}  // namespace onnxmap::detail
