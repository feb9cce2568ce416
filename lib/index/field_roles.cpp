#include "index/field_roles.hpp"

#include <string>

namespace onnxmap::detail {

FieldAction FieldActions::lookup(MessageKind kind, std::uint32_t number) noexcept {
  const schema::FieldDescriptor* desc = schema::find_field(kind, number);
  if (desc == nullptr || desc->type != schema::FieldType::message) return {};
  return {is_indexed(desc->message) ? FieldRole::indexed : FieldRole::leaf, desc->repeated,
          desc->message};
}

FieldActions::FieldActions() {
  for (int kind = 0; kind < schema::kMessageKindCount; ++kind) {
    for (std::uint32_t number = 0; number < kTableNumbers; ++number) {
      table_[kind][number] = lookup(static_cast<MessageKind>(kind), number);
    }
  }
}

const FieldActions& FieldActions::get() {
  static const FieldActions actions;
  return actions;
}

void validate_leaf(std::span<const std::byte> bytes, std::uint64_t base, MessageKind kind,
                   int depth, int max_depth) {
  // Leaf messages nest only in bounded ways (TypeProto in TypeProto), and the depth limit bounds
  // the recursion.
  if (depth > max_depth) {
    throw Error(ErrorKind::depth_limit,
                "messages nested deeper than max_depth " + std::to_string(max_depth), base);
  }
  const FieldActions& actions = FieldActions::get();
  wire::Reader reader(bytes, base);
  wire::Field field;
  while (reader.next(field)) {
    if (field.type != wire::WireType::len) continue;
    const FieldAction action = actions(kind, field.number);
    if (action.role != FieldRole::other) {
      validate_leaf(field.bytes, field.payload_offset, action.message, depth + 1, max_depth);
    }
  }
}

}  // namespace onnxmap::detail
