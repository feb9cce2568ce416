#pragma once
// What the indexing pass does with each field of each message kind. The pass looks this up for
// every field on the wire, so it is a flat table indexed by kind and field number rather than a
// search through the schema's descriptors.

#include <array>
#include <cstdint>

#include "index/model_index.hpp"

namespace onnxmap::detail {

enum class FieldRole : std::uint8_t {
  other,    // scalars, strings, payloads and unknown fields: the reader checks their extent
  leaf,     // a message validated in place and decoded from its parent's bytes on touch
  indexed,  // a message that gets a record of its own
  // A repeated number outside tensors' payloads (AttributeProto.ints, SparseTensorProto.dims,
  // ...): in its packed form, one LEN field whose elements the pass checks.
  packed_scalars,
};

struct FieldAction {
  FieldRole role = FieldRole::other;
  bool repeated = false;
  MessageKind message = MessageKind::ModelProto;  // the field's message type: leaf and indexed
  std::uint8_t scalar_width = 0;  // packed_scalars: 0 for varints, else 4 or 8 bytes each
};

class FieldActions {
 public:
  // onnx.proto numbers every message field below this; larger numbers take the slow lookup.
  static constexpr std::uint32_t kTableNumbers = 32;

  [[nodiscard]] static const FieldActions& get();

  // Bit n set when field n (below 64) of `kind` is a message field or packed_scalars; `metadata`
  // keeps only those peek shows.
  [[nodiscard]] std::uint64_t message_fields(MessageKind kind, bool metadata) const noexcept {
    return masks_[metadata ? 1 : 0][static_cast<std::size_t>(kind)];
  }

  [[nodiscard]] FieldAction operator()(MessageKind kind, std::uint32_t number) const noexcept {
    if (number < kTableNumbers) return table_[static_cast<std::size_t>(kind)][number];
    return lookup(kind, number);
  }

 private:
  FieldActions();
  [[nodiscard]] static FieldAction lookup(MessageKind kind, std::uint32_t number) noexcept;

  std::array<std::array<FieldAction, kTableNumbers>, schema::kMessageKindCount> table_{};
  std::array<std::array<std::uint64_t, schema::kMessageKindCount>, 2> masks_{};
};

// Whether `peek` shows field `number` of `kind`: it indexes the model's own fields and the main
// graph's inputs and outputs, nothing else.
[[nodiscard]] bool shown_by_peek(MessageKind kind, std::uint32_t number) noexcept;

}  // namespace onnxmap::detail
