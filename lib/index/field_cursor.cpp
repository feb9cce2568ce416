#include "index/field_cursor.hpp"

namespace onnxmap::detail {

GeneralField read_field_general(const std::byte* file, const std::byte* pos, const std::byte* end) {
  const auto base = static_cast<std::uint64_t>(pos - file);
  wire::Reader reader(wire::Bytes(pos, static_cast<std::size_t>(end - pos)), base);
  wire::Field field;
  (void)reader.next(field);  // pos < end: there is a field, or an error
  const bool has_bytes =
      field.type == wire::WireType::len || field.type == wire::WireType::start_group;
  return {CursorField{field.number, field.type, pos, file + field.payload_offset,
                      has_bytes ? field.bytes.size() : field.value},
          file + reader.position()};
}

}  // namespace onnxmap::detail
