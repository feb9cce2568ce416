#pragma once
// A tensor's payload, or rows [begin, end) of it, as views of the mapped (or mirrored) file,
// checked as Tensor::bytes() and slice_rows() check (and throwing their errors), without a fetch
// or read-ahead advice: for those two, and for the loader, which plans its own reads; and parts
// of a payload made readable for code that reads it piece by piece.

#include <cstddef>
#include <cstdint>
#include <span>

#include "onnxmap/tensor.hpp"

namespace onnxmap::detail {

[[nodiscard]] std::span<const std::byte> payload_view(const Tensor& t);
[[nodiscard]] std::span<const std::byte> rows_view(const Tensor& t, std::uint64_t begin,
                                                   std::uint64_t end);

// Bytes [offset, offset + length) of the payload (payload_view's checks and errors), made
// readable first: fetched for a model opened by URL, and read into the page cache in large
// requests when a mapped file does not hold them all there, so that touching them does not fault
// 4 KiB at a time. For code that reads a payload in parts (compare_plans).
[[nodiscard]] std::span<const std::byte> payload_range(const Tensor& t, std::uint64_t offset,
                                                       std::uint64_t length);
// Drops the pages lying wholly inside bytes [offset, offset + length) of the payload from this
// process (MappedFile::release_interior): the part's neighbours may be in use.
void release_payload_range(const Tensor& t, std::uint64_t offset, std::uint64_t length);

}  // namespace onnxmap::detail
