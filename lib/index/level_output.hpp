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
  std::uint64_t weight = 0;                  // the records' scan_weight()s, summed
  bool unsorted = false;  // a run of a split record's fields had children out of field order
};

// The scan's cost of a record, in bytes walked: a plain record (stepped over when it was added,
// most nodes of a graph) costs about what a few bytes of walking cost. The pass cuts levels into
// chunks of about the same weight.
[[nodiscard]] inline std::uint64_t scan_weight(const MessageRecord& record) noexcept {
  constexpr std::uint64_t kPlainWeight = 8;
  return record.plain != 0 ? kPlainWeight : record.length;  // kLongLength: large enough
}

}  // namespace onnxmap::detail
