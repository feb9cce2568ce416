#pragma once
// What scanning one level's records adds to the index: the records' children, the tensors read
// and their dims. Each thread of the pass scans its chunks of a level into one LevelOutput of its
// own, one chunk after another, and a ChunkResult marks where each chunk's part of it lies; the
// parts are appended to the index in file order. One output per thread rather than per chunk:
// tables that grow by remapping while another thread runs cost that thread a TLB flush each.

#include <cstdint>
#include <utility>
#include <vector>

#include "index/model_index.hpp"

namespace onnxmap::detail {

// Ids in an output (record ids in long_lengths, merged_spans and first_child, tensor ids in
// payload_errors, TensorRecord::dims_begin) are positions in that output's tables.
struct LevelOutput {
  PodTable<MessageRecord> records;                                    // the children
  std::vector<std::pair<std::uint32_t, std::uint64_t>> long_lengths;  // sorted by record id
  std::vector<std::pair<std::uint32_t, SpanList>> merged_spans;       // sorted by record id
  PodTable<TensorRecord> tensors;
  PodTable<std::int64_t> dims;
  std::vector<PayloadError> payload_errors;  // sorted by tensor id
  std::vector<std::uint32_t> first_child;    // per piece scanned: its first child's id
  std::uint64_t weight = 0;                  // the records' scan_weight()s, summed
};

// How far each table of an output is filled: a chunk's part lies between the marks taken before
// and after its scan.
struct OutputMarks {
  std::uint64_t weight = 0;
  std::uint32_t records = 0;
  std::uint32_t long_lengths = 0;
  std::uint32_t merged_spans = 0;
  std::uint32_t tensors = 0;
  std::uint32_t dims = 0;
  std::uint32_t payload_errors = 0;
  std::uint32_t first_child = 0;
};

[[nodiscard]] inline OutputMarks marks_of(const LevelOutput& out) noexcept {
  return {out.weight,
          static_cast<std::uint32_t>(out.records.size()),
          static_cast<std::uint32_t>(out.long_lengths.size()),
          static_cast<std::uint32_t>(out.merged_spans.size()),
          static_cast<std::uint32_t>(out.tensors.size()),
          static_cast<std::uint32_t>(out.dims.size()),
          static_cast<std::uint32_t>(out.payload_errors.size()),
          static_cast<std::uint32_t>(out.first_child.size())};
}

// One chunk's part of the output its thread scanned it into.
struct ChunkResult {
  LevelOutput* out = nullptr;
  OutputMarks begin;
  OutputMarks end;
  bool unsorted = false;  // the chunk, a run of a split record, had children out of field order

  // Around the chunk's scan into `output`; `scan_unsorted` is LevelScanner::unsorted().
  void start(LevelOutput& output) noexcept {
    out = &output;
    begin = marks_of(output);
  }
  void finish(bool scan_unsorted) noexcept {
    end = marks_of(*out);
    unsorted = scan_unsorted;
  }
  [[nodiscard]] std::uint32_t records() const noexcept { return end.records - begin.records; }
};

// The scan's cost of a record, in bytes walked: a plain record (stepped over when it was added,
// most nodes of a graph) costs about what a few bytes of walking cost. The pass cuts levels into
// chunks of about the same weight.
[[nodiscard]] inline std::uint64_t scan_weight(const MessageRecord& record) noexcept {
  constexpr std::uint64_t kPlainWeight = 8;
  return record.plain != 0 ? kPlainWeight : record.length;  // kLongLength: large enough
}

}  // namespace onnxmap::detail
