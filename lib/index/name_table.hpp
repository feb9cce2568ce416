#pragma once
// The index's table from tensor name to tensor record (ModelIndex::name_slots, next_same_name),
// filled once the pass has read every tensor.

#include "index/model_index.hpp"

namespace onnxmap::detail {

// Builds ModelIndex::name_slots, one linear-probing table whose slots hold the first tensor
// (breadth-first) of each lookup name, and chains the later tensors of a name in breadth-first
// order through next_same_name. `hashes` holds each tensor's TensorRecord::name_hash, by id:
// reading them side by side costs a sixteenth of reading them from the records.
void build_name_table(ModelIndex& index, const PodTable<std::uint32_t>& hashes);

}  // namespace onnxmap::detail
