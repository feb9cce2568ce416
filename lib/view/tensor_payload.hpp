#pragma once
// A tensor's payload, or rows [begin, end) of it, as views of the mapped (or mirrored) file,
// checked as Tensor::bytes() and slice_rows() check (and throwing their errors), without a fetch
// or read-ahead advice: for those two, and for the loader, which plans its own reads.

#include <cstddef>
#include <cstdint>
#include <span>

#include "onnxmap/tensor.hpp"

namespace onnxmap::detail {

[[nodiscard]] std::span<const std::byte> payload_view(const Tensor& t);
[[nodiscard]] std::span<const std::byte> rows_view(const Tensor& t, std::uint64_t begin,
                                                   std::uint64_t end);

}  // namespace onnxmap::detail
