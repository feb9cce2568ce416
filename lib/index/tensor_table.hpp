#pragma once
// Tensor records: what the indexing pass learns about each TensorProto (name, type, dims, where
// its bytes are), checked for consistency.

#include <cstdint>

#include "index/model_index.hpp"
#include "index/tensor_fields.hpp"
#include "index/walker.hpp"

namespace onnxmap::detail {

// Whether scanning a record of `kind` writes a TensorRecord: a tensor's does, unless the pass
// reads metadata only.
[[nodiscard]] constexpr bool gets_tensor_record(MessageKind kind, bool metadata_only) noexcept {
  return kind == MessageKind::TensorProto && !metadata_only;
}

// Reads the metadata of TensorProto record `id`, at `depth` in the message tree, and appends its
// TensorRecord to the index's tensors, its dims to the index's, its name hash to `name_hashes`.
// Throws onnxmap::Error (bad_tensor, unsafe_path, max_tensors passed, ...) with a field path
// relative to the tensor, unless OpenOptions::collect_payload_errors keeps payload problems in
// the index's payload_errors.
void index_tensor(ModelIndex& index, PassContext& ctx, std::uint32_t id, int depth,
                  PodTable<std::uint32_t>& name_hashes);

// Gives each unnamed tensor held by a Constant node's attribute the node's first output as its
// lookup name (and `name_hashes` its hash): the name a graph uses for it. Once the pass is over,
// when every record knows its parent.
void name_constants(ModelIndex& index, PodTable<std::uint32_t>& name_hashes);

// Resolves an external-data `location` against the model's folder under the path policy, maps the
// file once, and returns its index in ModelIndex::data_files.
[[nodiscard]] std::uint32_t open_data_file(ModelIndex& index, std::string_view location);

}  // namespace onnxmap::detail
