#include "index/field_roles.hpp"

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

}  // namespace onnxmap::detail
