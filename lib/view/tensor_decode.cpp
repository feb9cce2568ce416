#include "view/tensor_decode.hpp"

#include <string>

#include "index/tensor_table.hpp"
#include "onnxmap/bytes.hpp"
#include "wire/cursor.hpp"

namespace onnxmap::detail {

namespace {

using TP = schema::TensorProto;

// The typed field onnx.proto assigns to each data type (0: none, e.g. STRING or unknown).
std::uint32_t field_for(DataType type) {
  switch (type) {
    case DataType::float32:
    case DataType::complex64: return TP::kFloatData;
    case DataType::float64:
    case DataType::complex128: return TP::kDoubleData;
    case DataType::int64: return TP::kInt64Data;
    case DataType::uint32:
    case DataType::uint64: return TP::kUint64Data;
    case DataType::string:
    case DataType::undefined: return 0;
    default: return TP::kInt32Data;  // every other type, as bit patterns or packed bytes
  }
}

// Bytes one typed entry becomes in raw_data: complex parts are separate entries, and a sub-byte
// type packs two (4-bit) or four (2-bit) elements into each entry.
std::size_t entry_bytes(DataType type, std::uint32_t bits) {
  if (type == DataType::complex64) return 4;
  if (type == DataType::complex128) return 8;
  return bits < 8 ? 1 : bits / 8;
}

}  // namespace

std::vector<std::byte> decode_typed(const ModelIndex& index, const SpanList& spans,
                                    std::uint32_t field, std::int32_t data_type,
                                    std::uint64_t count) {
  const auto type = static_cast<DataType>(data_type);
  const auto t = traits(type);
  const std::string name = to_string(type);
  const std::uint32_t expected_field = t ? field_for(type) : 0;
  if (expected_field == 0 || expected_field != field) {
    const auto* desc = schema::find_field(schema::MessageKind::TensorProto, field);
    throw Error(ErrorKind::bad_tensor,
                std::string(desc != nullptr ? desc->name : "a typed field") +
                    " cannot hold elements of " + name,
                spans.front().offset);
  }
  const std::uint64_t expected = packed_byte_size(type, count).value_or(0);
  const std::size_t width = entry_bytes(type, t->bits);
  std::vector<std::byte> out;
  // Memory follows the bytes on the wire, never the element count a file claims: each entry
  // takes at least one byte of the tensor's own message (not of the whole, maybe huge, file).
  std::uint64_t message_bytes = 0;
  for (const ByteRange& span : spans) message_bytes += span.length;
  out.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(expected, message_bytes * width)));
  const auto append = [&](std::uint64_t v) {
    for (std::size_t i = 0; i < width; ++i) out.push_back(static_cast<std::byte>(v >> (8U * i)));
  };
  std::vector<std::byte> copy;
  for (const ByteRange& span : spans) {
    // Decoded from a copy, made under a guard: a fault in the mapped file (it shrank while open)
    // is then an error here, and the decoding (which allocates and may throw) reads memory.
    std::span<const std::byte> bytes = index.bytes(span);
    if (index.file.is_mapped()) {
      copy.resize(bytes.size());
      copy_bytes(bytes, copy);
      bytes = copy;
    }
    wire::Cursor cursor(bytes, span.offset);
    while (cursor.next(field)) {
      const wire::Field& f = cursor.field();
      const std::uint64_t at = cursor.payload_span().offset;
      if (field == TP::kFloatData) {
        (void)wire::for_each_fixed32(f, at, append);
      } else if (field == TP::kDoubleData) {
        (void)wire::for_each_fixed64(f, at, append);
      } else {
        (void)wire::for_each_varint(f, at, append);
      }
    }
  }
  if (out.size() != expected) {
    throw Error(ErrorKind::bad_tensor,
                std::to_string(out.size()) + " bytes of " + name + " in the typed field, but " +
                    std::to_string(count) + " elements need " + std::to_string(expected),
                spans.front().offset);
  }
  return out;
}

}  // namespace onnxmap::detail
