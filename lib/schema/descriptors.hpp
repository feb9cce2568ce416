#pragma once
// What each field of each onnx.proto message is: name, JSON name, type, label. The indexing pass
// uses it to know which LEN fields are messages, and the JSON dump to print every field.

#include <cstdint>
#include <span>
#include <string>

#include "onnxmap/schema.hpp"
#include "schema/fields.hpp"
#include "wire/wire.hpp"

namespace onnxmap::schema {

enum class FieldType : std::uint8_t {
  int64_,
  int32_,
  uint64_,
  float_,
  double_,
  string_,
  bytes_,
  enum_,
  message,
};

enum class EnumKind : std::uint8_t { none, attribute_type, data_location };

struct FieldDescriptor {
  std::uint32_t number;
  const char* name;       // as in onnx.proto
  const char* json_name;  // lowerCamelCase, as protobuf's JSON mapping names it
  FieldType type;
  MessageKind message;  // the field's message type, when type == message
  EnumKind enum_kind;
  bool repeated;
  bool packed;        // written packed by libprotobuf (a reader accepts both forms anyway)
  const char* oneof;  // name of the oneof the field belongs to, or nullptr
};

struct MessageDescriptor {
  const char* name;  // as in onnx.proto, nested ones dotted ("TensorProto.Segment")
  std::span<const FieldDescriptor> fields;
};

[[nodiscard]] const MessageDescriptor& descriptor(MessageKind kind) noexcept;

// The descriptor of field `number` of `kind`, or nullptr for a field the schema does not know.
[[nodiscard]] inline const FieldDescriptor* find_field(MessageKind kind,
                                                       std::uint32_t number) noexcept {
  for (const FieldDescriptor& field : descriptor(kind).fields) {
    if (field.number == number) return &field;
  }
  return nullptr;
}

}  // namespace onnxmap::schema

namespace onnxmap::schema {

// Whether a field arriving with wire type `type` is this field: its own encoding, or the packed
// form of a repeated scalar. libprotobuf treats a field that fits neither as unknown.
[[nodiscard]] constexpr bool wire_type_fits(const FieldDescriptor& field,
                                            wire::WireType type) noexcept {
  const bool packed_form = field.repeated && type == wire::WireType::len;
  switch (field.type) {
    case FieldType::int64_:
    case FieldType::int32_:
    case FieldType::uint64_:
    case FieldType::enum_: return type == wire::WireType::varint || packed_form;
    case FieldType::float_: return type == wire::WireType::i32 || packed_form;
    case FieldType::double_: return type == wire::WireType::i64 || packed_form;
    case FieldType::string_:
    case FieldType::bytes_:
    case FieldType::message: return type == wire::WireType::len;
  }
  return false;
}

// The TensorProto fields that hold elements one by one (float_data ... uint64_data and
// string_data), as opposed to raw_data and external data.
[[nodiscard]] constexpr bool is_typed_data_field(std::uint32_t number) noexcept {
  switch (number) {
    case TensorProto::kFloatData:
    case TensorProto::kInt32Data:
    case TensorProto::kStringData:
    case TensorProto::kInt64Data:
    case TensorProto::kDoubleData:
    case TensorProto::kUint64Data: return true;
    default: return false;
  }
}

}  // namespace onnxmap::schema

namespace onnxmap {

// to_string(DataType) of the raw int32 a file carries (the index keeps data types as read).
[[nodiscard]] inline std::string to_string(std::int32_t type) {
  return to_string(static_cast<DataType>(type));
}

}  // namespace onnxmap
