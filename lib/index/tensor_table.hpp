#pragma once
// Tensor records: what the indexing pass learns about each TensorProto (name, type, dims, where
// its bytes are), checked for consistency, and the name hash over them.

#include <cstdint>
#include <optional>

#include "index/model_index.hpp"
#include "index/payload_trim.hpp"

namespace onnxmap::detail {

// Reads the metadata of TensorProto record `id`, at `depth` in the message tree, and appends its
// TensorRecord. Throws onnxmap::Error (bad_tensor, unsafe_path, ...) with a field path relative to
// the tensor. Each field read is reported to `trim`.
void index_tensor(ModelIndex& index, std::uint32_t id, int depth, PayloadTrimmer& trim);

// Builds ModelIndex::name_slots and the next_same_name chains, in breadth-first order.
void build_name_table(ModelIndex& index);

// The number of elements of `dims` (1 for a scalar), or nullopt when the product overflows.
[[nodiscard]] std::optional<std::uint64_t> element_count(std::span<const std::int64_t> dims);
// Bytes that `count` elements of `data_type` take in raw_data (sub-byte types packed), or nullopt
// on overflow or for a type with no fixed width (STRING, unknown types).
[[nodiscard]] std::optional<std::uint64_t> packed_byte_size(std::int32_t data_type,
                                                            std::uint64_t count);

// Resolves an external-data `location` against the model's folder under the path policy, maps the
// file once, and returns its index in ModelIndex::data_files.
[[nodiscard]] std::uint32_t open_data_file(ModelIndex& index, std::string_view location);

}  // namespace onnxmap::detail
