#pragma once
// Tensor records: what the indexing pass learns about each TensorProto (name, type, dims, where
// its bytes are), checked for consistency.

#include <cstdint>

#include "index/level_output.hpp"
#include "index/model_index.hpp"
#include "index/tensor_fields.hpp"
#include "index/walker.hpp"

namespace onnxmap::detail {

// Reads the metadata of TensorProto record `id`, at `depth` in the message tree, and writes its
// TensorRecord to the next of `slots`, its dims to `out.dims`. Throws onnxmap::Error (bad_tensor,
// unsafe_path, max_tensors passed, ...) with a field path relative to the tensor, unless
// OpenOptions::collect_payload_errors keeps payload problems in `out.payload_errors`.
void index_tensor(const ModelIndex& index, PassContext& ctx, std::uint32_t id, int depth,
                  const OpenDataFile& open_data_file, TensorSlots& slots, LevelOutput& out);

// Resolves an external-data `location` against the model's folder under the path policy, maps the
// file once, and returns its index in ModelIndex::data_files.
[[nodiscard]] std::uint32_t open_data_file(ModelIndex& index, std::string_view location);

}  // namespace onnxmap::detail
