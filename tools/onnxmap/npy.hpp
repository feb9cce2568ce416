#pragma once
// NumPy .npy (format 1.0) output of a tensor: numpy-native types as themselves, types NumPy lacks
// as their bit patterns, 4-bit and 2-bit types unpacked to one element per byte.

#include <cstdint>
#include <ostream>
#include <span>
#include <vector>

namespace onnxmap::cli {

// The .npy header for `descr` ("<f4") and `shape`, padded so the data starts 64-byte aligned.
[[nodiscard]] std::vector<char> npy_header(std::string_view descr,
                                           std::span<const std::int64_t> shape);

// Sub-byte elements (`bits` 4 or 2, first element in the low bits) to one byte each;
// `is_signed` sign-extends them (INT4, INT2).
[[nodiscard]] std::vector<std::byte> unpack_sub_byte(std::span<const std::byte> packed,
                                                     std::uint32_t bits, bool is_signed,
                                                     std::uint64_t count);

}  // namespace onnxmap::cli
