#pragma once
// What scanning a run of one level's records adds to the index: the records' children, the
// tensors read and their dims, with ids local to this output. The pass scans a level in runs
// (one, or one per chunk on the pool) and appends the outputs to the index in file order.

#include <cstdint>
#include <utility>
#include <vector>

#include "index/model_index.hpp"

namespace onnxmap::detail {

struct LevelOutput {
  PodTable<MessageRecord> records;                                    // the children
  std::vector<std::pair<std::uint32_t, std::uint64_t>> long_lengths;  // by local record id
  std::vector<std::pair<std::uint32_t, SpanList>> merged_spans;       // by local record id
  PodTable<TensorRecord> tensors;  // dims_begin is local to `dims`
  PodTable<std::int64_t> dims;
  std::vector<PayloadError> payload_errors;  // by local tensor id
  std::vector<std::uint32_t> first_child;    // per piece scanned: its first child's local id
};

}  // namespace onnxmap::detail
