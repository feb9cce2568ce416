#pragma once
// One structural message of a model (a graph, node, attribute, tensor, ...) in 16 bytes: a
// metadata-heavy model holds hundreds of thousands of them. What the breadth-first layout of the
// record table already tells (parent, depth, child count, position within the parent's field) is
// not stored; ModelIndex derives it.

#include <cstdint>

#include "onnxmap/schema.hpp"

namespace onnxmap::detail {

// "No record", "no tensor", "no data file": an id that is never valid.
inline constexpr std::uint32_t kNone = UINT32_MAX;

struct MessageRecord {
  // Offsets have 48 bits: model files up to 256 TiB.
  static constexpr std::uint64_t kOffsetLimit = std::uint64_t{1} << 48U;
  // A length of 4 GiB or more is kept in ModelIndex::long_lengths instead.
  static constexpr std::uint32_t kLongLength = UINT32_MAX;

  std::uint64_t offset : 48 = 0;       // of the first span
  std::uint64_t field_number : 8 = 0;  // the parent's field holding it; onnx.proto's are below 32
  std::uint64_t kind : 6 = 0;          // a schema::MessageKind
  std::uint64_t merged : 1 = 0;        // more spans in ModelIndex::merged_spans
  std::uint64_t plain : 1 = 0;         // during the pass: stepped over when added, no children
  std::uint32_t length = 0;            // of the first span, or kLongLength
  std::uint32_t first_child = 0;       // children are contiguous, sorted by field number, and end
                                       // where the next record's children begin
};
static_assert(sizeof(MessageRecord) == 16);
static_assert(schema::kMessageKindCount <= 64);

}  // namespace onnxmap::detail
