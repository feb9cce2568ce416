#pragma once
// Decoding of a message's fields from its bytes in the model file: what every view's getters
// call. A view is a handle (the index and a record); a Fields is made from it when a getter runs.
// The index validated these bytes at open, so these walks cannot fail on structure.

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "common/span.hpp"
#include "index/model_index.hpp"
#include "onnxmap/views.hpp"

namespace onnxmap::detail {

class Fields {
 public:
  // The fields of record `record` (all of its spans when a singular field was merged).
  Fields(const ModelIndex* index, std::uint32_t record);
  // The fields of a leaf message the index does not record (types, string pairs, ...).
  Fields(const ModelIndex* index, SpanList spans) : index_(index), spans_(std::move(spans)) {}

  [[nodiscard]] const SpanList& spans() const noexcept { return spans_; }
  // Offset in the model file of the message's first byte (for errors).
  [[nodiscard]] std::uint64_t offset() const noexcept {
    return spans_.empty() ? 0 : spans_.front().offset;
  }
  [[nodiscard]] bool has(std::uint32_t number) const;
  // Singular fields: the last occurrence wins.
  [[nodiscard]] std::string_view string_field(std::uint32_t number) const;
  [[nodiscard]] std::optional<std::uint64_t> varint_field(std::uint32_t number) const;
  [[nodiscard]] std::optional<std::uint32_t> fixed32_field(std::uint32_t number) const;
  // Repeated fields, packed or not, in wire order.
  [[nodiscard]] std::vector<std::string_view> strings_field(std::uint32_t number) const;
  [[nodiscard]] std::vector<std::int64_t> int64s_field(std::uint32_t number) const;
  [[nodiscard]] std::vector<float> floats_field(std::uint32_t number) const;
  // A singular leaf message (all occurrences, merged), and repeated leaf messages.
  [[nodiscard]] SpanList message_field(std::uint32_t number) const;
  [[nodiscard]] std::vector<SpanList> messages_field(std::uint32_t number) const;
  // Which of fields `a` and `b` occurs last on the wire (0: neither): settles a oneof.
  [[nodiscard]] std::uint32_t last_of(std::uint32_t a, std::uint32_t b) const;

 private:
  const ModelIndex* index_;
  SpanList spans_;
};

}  // namespace onnxmap::detail
