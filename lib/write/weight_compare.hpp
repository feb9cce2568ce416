#pragma once
// Comparing a model's tensor with a checkpoint's without reading either twice: a fingerprint of
// a few elements spread over a tensor (as stored, or read through the transpose of a matrix),
// and full comparisons, straight or transposed. Reads of mapped bytes are guarded
// (io/fault_guard.hpp): a file that shrank is an onnxmap::Error, not a signal.

#include <cstddef>
#include <cstdint>
#include <span>

namespace onnxmap::detail {

// The fingerprint of a tensor of `count` elements of `element_size` bytes (1, 2, 4 or 8): a hash
// of 16 elements spread over it, the first and the last among them. With `transposed_rows` > 0,
// `bytes` is a matrix of that many rows and the elements are read as its transpose's: the
// fingerprint a [columns, rows] tensor holding the transpose would have.
[[nodiscard]] std::uint64_t fingerprint(std::span<const std::byte> bytes, std::size_t element_size,
                                        std::uint64_t transposed_rows = 0);

// Whether `a` and `b` agree at the 16 places of 16 bytes spread over them that fingerprint
// would read (a cheap test for two tensors said to be the same); sizes must be equal.
[[nodiscard]] bool sampled_equal(std::span<const std::byte> a, std::span<const std::byte> b);

// Whether `a`, a [rows, columns] matrix of `element_size`-byte elements, is the transpose of `b`
// (a [columns, rows] one), compared in tiles.
[[nodiscard]] bool transposed_equal(std::span<const std::byte> a, std::span<const std::byte> b,
                                    std::size_t element_size, std::uint64_t rows);

}  // namespace onnxmap::detail
