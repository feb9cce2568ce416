#pragma once
// NumPy .npy (format 1.0) output of a tensor: numpy-native types as themselves, types NumPy lacks
// as their bit patterns, 4-bit and 2-bit types unpacked to one element per byte (sub_byte.hpp).

#include <cstdint>
#include <ostream>
#include <span>
#include <string_view>
#include <vector>

namespace onnxmap::cli {

// The .npy header for `descr` ("<f4") and `shape`, padded so the data starts 64-byte aligned.
[[nodiscard]] std::vector<char> npy_header(std::string_view descr,
                                           std::span<const std::int64_t> shape);

}  // namespace onnxmap::cli
