#include "index/field_roles.hpp"

#include <string>
#include <vector>

#include "index/field_cursor.hpp"

namespace onnxmap::detail {

FieldAction FieldActions::lookup(MessageKind kind, std::uint32_t number) noexcept {
  using schema::FieldType;
  const schema::FieldDescriptor* desc = schema::find_field(kind, number);
  if (desc == nullptr) return {};
  // A tensor's repeated numbers are its dims (checked as the tensor is indexed) and its
  // payloads, which the pass never reads.
  if (desc->repeated && kind != MessageKind::TensorProto) {
    switch (desc->type) {
      case FieldType::int64_:
      case FieldType::int32_:
      case FieldType::uint64_:
      case FieldType::enum_: return {FieldRole::packed_scalars, true, MessageKind::ModelProto, 0};
      case FieldType::float_: return {FieldRole::packed_scalars, true, MessageKind::ModelProto, 4};
      case FieldType::double_: return {FieldRole::packed_scalars, true, MessageKind::ModelProto, 8};
      default: break;
    }
  }
  if (desc->type != FieldType::message) return {};
  return {is_indexed(desc->message) ? FieldRole::indexed : FieldRole::leaf, desc->repeated,
          desc->message};
}

bool shown_by_peek(MessageKind kind, std::uint32_t number) noexcept {
  if (kind == MessageKind::ModelProto)
    return number != schema::ModelProto::kFunctions && number != schema::ModelProto::kTrainingInfo;
  if (kind == MessageKind::GraphProto)
    return number == schema::GraphProto::kInput || number == schema::GraphProto::kOutput;
  return true;  // inside a value info: its type
}

FieldActions::FieldActions() {
  for (int kind = 0; kind < schema::kMessageKindCount; ++kind) {
    for (std::uint32_t number = 0; number < 64; ++number) {
      const FieldAction action = lookup(static_cast<MessageKind>(kind), number);
      if (number < kTableNumbers) table_[kind][number] = action;
      if (action.role == FieldRole::other) continue;
      masks_[0][kind] |= std::uint64_t{1} << number;
      if (shown_by_peek(static_cast<MessageKind>(kind), number)) {
        masks_[1][kind] |= std::uint64_t{1} << number;
      }
    }
  }
}

const FieldActions& FieldActions::get() {
  static const FieldActions actions;
  return actions;
}

void validate_packed(const std::byte* file, const CursorField& field, std::uint8_t width) {
  const wire::Bytes bytes = field.bytes();
  const auto base = static_cast<std::uint64_t>(field.payload - file);
  std::size_t pos = 0;
  if (width == 0) {
    while (pos < bytes.size()) (void)wire::read_varint(bytes, pos, base);
    return;
  }
  // Only a trailing partial element can be wrong; reading it gives the views' own error.
  pos = bytes.size() - bytes.size() % width;
  if (pos == bytes.size()) return;
  if (width == 4) (void)wire::read_fixed32(bytes, pos, base);
  if (width == 8) (void)wire::read_fixed64(bytes, pos, base);
}

void validate_leaf(const std::byte* file, Span span, MessageKind kind, int depth, int max_depth) {
  // Leaf messages nest only in bounded ways (TypeProto in TypeProto), yet max_depth may be as
  // large as kMaxDepthCeiling: an explicit stack, not recursion, so no depth within the limit
  // can overflow the thread's stack (ASan's larger frames included).
  struct Pending {
    Span span;
    MessageKind kind;
    int depth;
  };
  std::vector<Pending> pending{{span, kind, depth}};
  const FieldActions& actions = FieldActions::get();
  while (!pending.empty()) {
    const Pending leaf = pending.back();
    pending.pop_back();
    if (leaf.depth > max_depth) {
      throw Error(ErrorKind::depth_limit,
                  "messages nested deeper than max_depth " + std::to_string(max_depth),
                  leaf.span.offset);
    }
    for_each_message_field(
        file, leaf.span, actions.message_fields(leaf.kind, false), [&](const CursorField& field) {
          const FieldAction action = actions(leaf.kind, field.number);
          if (action.role == FieldRole::packed_scalars)
            validate_packed(file, field, action.scalar_width);
          if (action.role != FieldRole::leaf && action.role != FieldRole::indexed) return;
          pending.push_back({field.payload_span(file), action.message, leaf.depth + 1});
        });
  }
}

}  // namespace onnxmap::detail
