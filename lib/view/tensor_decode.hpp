#pragma once
// Typed payload fields (float_data, int32_data, ...) decoded into the raw_data layout.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "index/model_index.hpp"

namespace onnxmap::detail {

// Decodes every occurrence of typed field `field` in the tensor's `spans` into raw_data layout
// for `data_type`; checks the element count against `count`. Throws onnxmap::Error (bad_tensor).
[[nodiscard]] std::vector<std::byte> decode_typed(const ModelIndex& index, const SpanList& spans,
                                                  std::uint32_t field, std::int32_t data_type,
                                                  std::uint64_t count);

}  // namespace onnxmap::detail
