#pragma once
// The library's and the front ends' guarded comparisons and touches of mapped bytes, beside the
// public copy_bytes (onnxmap/bytes.hpp); lib/tooling/ hands them to the command and the viewer.
// A fault reading the bytes (a mapped file that shrank while open, an I/O error under the map)
// is an onnxmap::Error (io) naming the file, the byte and the file's size now, not a signal. Any
// number of threads may call them at once.

#include <cstddef>
#include <span>

namespace onnxmap::detail {

// Whether `a` and `b` hold the same bytes (the same sizes included).
[[nodiscard]] bool equal_bytes(std::span<const std::byte> a, std::span<const std::byte> b);

// Reads the first byte of `bytes` and the first of every 4096-byte page after it, which brings
// each page of a mapped file into this process, and returns their XOR (so the reads cannot be
// left out).
[[nodiscard]] std::byte touch_pages(std::span<const std::byte> bytes);

}  // namespace onnxmap::detail
