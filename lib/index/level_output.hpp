#pragma once
// What scanning one level's records adds to the index: the records' children and the dims of the
// tensors read. Each thread of the pass scans its chunks of a level into one LevelOutput of its
// own, one chunk after another, and a ChunkResult marks where each chunk's part of it lies; the
// parts are appended to the index in file order. One output per thread rather than per chunk:
// tables that grow by remapping while another thread runs cost that thread a TLB flush each.
// The level's first chunks, taken by one thread in a row, are scanned into one more output whose
// records are a window of the index's table (children_window() in index/level_append.hpp): they
// are where the append would copy them, which then only sets where their children begin.
// The tensor records themselves go straight into the index (TensorSlots): a level's tensors are
// its TensorProto records, so where each chunk's tensors go is known before it is scanned.

#include <cstdint>
#include <utility>
#include <vector>

#include "index/model_index.hpp"

namespace onnxmap::detail {

// Ids in an output (record ids in long_lengths, merged_spans and first_child, and
// TensorRecord::dims_begin for the tensors its chunks wrote) are positions in that output's
// tables; tensor ids (in payload_errors) are the index's. Aligned to a cache line: each thread
// writes its own output's sizes and sums with every record, and a line shared with another's
// would pass between the cores at that rate.
struct alignas(64) LevelOutput {
  PodTable<MessageRecord> records;                                    // the children
  std::vector<std::pair<std::uint32_t, std::uint64_t>> long_lengths;  // sorted by record id
  std::vector<std::pair<std::uint32_t, SpanList>> merged_spans;       // sorted by record id
  PodTable<std::int64_t> dims;
  std::vector<PayloadError> payload_errors;  // sorted by tensor id
  PodTable<std::uint32_t> first_child;       // per piece scanned: its first child's id
  std::uint64_t weight = 0;                  // the records' scan_weight()s, summed
  std::uint32_t tensor_children = 0;         // the records that gets_tensor_record()
};

// Whether scanning a record of `kind` writes a TensorRecord: a tensor's does, unless the pass
// reads metadata only. A level's tensor ids follow the order of its records that do.
[[nodiscard]] constexpr bool gets_tensor_record(MessageKind kind, bool metadata_only) noexcept {
  return kind == MessageKind::TensorProto && !metadata_only;
}

// Where a scan writes its tensors' records: the index's tensor table, grown by a level's count of
// TensorProto records before the level is scanned, so that threads fill disjoint ranges of it in
// place. `next` is the id of the next tensor; the table ends at `end` (max_tensors, or the level's
// last tensor). Each tensor's name hash is also written to `hashes`, by id: the name table is
// built from them without reading the records again.
struct TensorSlots {
  TensorRecord* table = nullptr;
  std::uint32_t* hashes = nullptr;
  std::uint32_t next = 0;
  std::uint32_t end = 0;
};

// How far each table of an output is filled: a chunk's part lies between the marks taken before
// and after its scan.
struct OutputMarks {
  std::uint64_t weight = 0;
  std::uint32_t tensor_children = 0;
  std::uint32_t records = 0;
  std::uint32_t long_lengths = 0;
  std::uint32_t merged_spans = 0;
  std::uint32_t dims = 0;
  std::uint32_t payload_errors = 0;
  std::uint32_t first_child = 0;
};

[[nodiscard]] inline OutputMarks marks_of(const LevelOutput& out) noexcept {
  return {out.weight,
          out.tensor_children,
          static_cast<std::uint32_t>(out.records.size()),
          static_cast<std::uint32_t>(out.long_lengths.size()),
          static_cast<std::uint32_t>(out.merged_spans.size()),
          static_cast<std::uint32_t>(out.dims.size()),
          static_cast<std::uint32_t>(out.payload_errors.size()),
          static_cast<std::uint32_t>(out.first_child.size())};
}

// One chunk's part of the output its thread scanned it into, and the tensors it wrote.
struct ChunkResult {
  LevelOutput* out = nullptr;
  OutputMarks begin;
  OutputMarks end;
  std::uint32_t first_tensor = 0;
  std::uint32_t end_tensor = 0;
  bool unsorted = false;  // the chunk, a run of a split record, had children out of field order

  // Around the chunk's scan into `output`, writing tensors from id `tensor` on;
  // `scan_unsorted` is LevelScanner::unsorted(), `next_tensor` its TensorSlots::next.
  void start(LevelOutput& output, std::uint32_t tensor) noexcept {
    out = &output;
    begin = marks_of(output);
    first_tensor = tensor;
  }
  void finish(bool scan_unsorted, std::uint32_t next_tensor) noexcept {
    end = marks_of(*out);
    unsorted = scan_unsorted;
    end_tensor = next_tensor;
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
