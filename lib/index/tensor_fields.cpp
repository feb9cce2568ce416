#include "index/tensor_fields.hpp"

#include <array>
#include <charconv>
#include <string>

namespace onnxmap::detail {

namespace {

using TP = schema::TensorProto;

std::uint64_t parse_decimal(std::string_view key, std::string_view text, std::uint64_t at) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) {
    throw Error(ErrorKind::bad_tensor,
                "external_data '" + std::string(key) + "' is '" + std::string(text) +
                    "', not a non-negative decimal number",
                at, "external_data");
  }
  return value;
}

// Bits per element of data type `data_type` (0 for STRING and for numbers that are no type),
// from a table: the pass asks once per tensor. At namespace scope, not a function's static: no
// guard to check on every call.
constexpr std::int32_t kTableTypes = 64;
const std::array<std::uint8_t, kTableTypes> kElementBits = [] {
  std::array<std::uint8_t, kTableTypes> bits{};
  for (std::int32_t type = 0; type < kTableTypes; ++type) {
    const auto t = traits(static_cast<DataType>(type));
    bits[type] = t ? static_cast<std::uint8_t>(t->bits) : 0;
  }
  return bits;
}();

std::uint32_t element_bits(std::int32_t data_type) noexcept {
  if (data_type >= 0 && data_type < kTableTypes) return kElementBits[data_type];
  const auto t = traits(static_cast<DataType>(data_type));
  return t ? t->bits : 0;
}

// The external part of locate_payload: the data file and the range in it.
std::variant<Payload, Error> locate_external(const ExternalRef& ref, std::uint64_t tensor_offset,
                                             const OpenDataFile& open_data_file) {
  if (ref.location.empty()) {
    return Error(ErrorKind::bad_tensor, "data_location is EXTERNAL but no 'location' is given",
                 tensor_offset, "external_data");
  }
  DataFileRef file;
  try {
    file = open_data_file(ref.location);
  } catch (const Error& e) {
    return e;
  }
  const std::string location(ref.location);
  const std::uint64_t offset = ref.offset.value_or(0);
  if (offset > file.size) {
    return Error(ErrorKind::out_of_bounds,
                 "external offset " + std::to_string(offset) + " is past the end of '" + location +
                     "' (" + std::to_string(file.size) + " bytes)",
                 tensor_offset, "external_data");
  }
  const std::uint64_t length = ref.length.value_or(file.size - offset);
  if (length > file.size - offset) {
    return Error(ErrorKind::out_of_bounds,
                 "external range [" + std::to_string(offset) + ", +" + std::to_string(length) +
                     ") runs past the end of '" + location + "' (" + std::to_string(file.size) +
                     " bytes)",
                 tensor_offset, "external_data");
  }
  return Payload{TensorStorage::external, file.id, offset, length};
}

}  // namespace

// Overflow is tested by the multiplications themselves: the pass asks for every tensor, and a
// division per dimension would cost more than the rest of the check.
std::optional<std::uint64_t> element_count(std::span<const std::int64_t> dims) {
  std::uint64_t count = 1;
  for (const std::int64_t d : dims) {
    if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(d), &count)) return std::nullopt;
  }
  return count;
}

std::optional<std::uint64_t> packed_byte_size(std::int32_t data_type, std::uint64_t count) {
  const std::uint32_t bits = element_bits(data_type);
  if (bits == 0) return std::nullopt;
  std::uint64_t total_bits = 0;
  if (__builtin_mul_overflow(count, std::uint64_t{bits}, &total_bits) ||
      total_bits > UINT64_MAX - 7) {
    return std::nullopt;
  }
  return (total_bits + 7) / 8;
}

std::variant<Payload, Error> locate_payload(const TensorFields& fields,
                                            std::span<const std::int64_t> dims,
                                            std::uint64_t tensor_offset,
                                            const OpenDataFile& open_data_file) {
  const auto count = element_count(dims);
  if (!count) {
    return Error(ErrorKind::bad_tensor, "the product of dims overflows 64 bits", tensor_offset,
                 "dims");
  }
  const auto expected = packed_byte_size(fields.data_type, *count);
  if (!expected && element_bits(fields.data_type) > 0) {
    return Error(ErrorKind::bad_tensor, "the byte size of dims overflows 64 bits", tensor_offset,
                 "dims");
  }
  Payload payload;
  if (fields.is_external) {
    auto external = locate_external(fields.external, tensor_offset, open_data_file);
    if (std::holds_alternative<Error>(external)) return external;
    payload = std::get<Payload>(external);
  } else if (fields.raw) {
    if (fields.data_type == static_cast<std::int32_t>(DataType::string)) {
      return Error(ErrorKind::bad_tensor, "a STRING tensor cannot use raw_data", fields.raw->offset,
                   "raw_data");
    }
    payload = {TensorStorage::raw, kNone, fields.raw->offset, fields.raw->length};
  } else if (fields.typed) {
    payload = {TensorStorage::typed, kNone, fields.typed->offset, fields.typed->length};
  }
  const bool raw = payload.storage == TensorStorage::raw;
  if ((raw || payload.storage == TensorStorage::external) && expected &&
      payload.length != *expected) {
    return Error(ErrorKind::bad_tensor,
                 std::to_string(payload.length) + " bytes, but " + std::to_string(*count) +
                     " elements of " + to_string(fields.data_type) + " need " +
                     std::to_string(*expected),
                 raw ? payload.offset : tensor_offset, raw ? "raw_data" : "external_data");
  }
  return payload;
}

void TensorCollector::fail(const Error& error) {
  if (!collect_) throw error;
  if (!problem) problem = error;
}

void TensorCollector::field(const CursorField& field) {
  const bool is_len = field.type == wire::WireType::len;
  switch (field.number) {
    case TP::kDims: read_dims(field); break;
    case TP::kDataType:
      if (field.type == wire::WireType::varint) fields.data_type = wire::as_int32(field.value);
      break;
    case TP::kName:
      if (is_len) fields.name = wire::as_string(field.bytes());
      break;
    case TP::kRawData:
      if (is_len) fields.raw = field.payload_span(ctx_.file);
      break;
    case TP::kExternalData:
      if (is_len) read_external_entry(field);
      break;
    case TP::kDataLocation:
      // proto2: an unknown enum value is kept aside, not stored in the field.
      if (field.type == wire::WireType::varint && field.value <= 1) {
        fields.is_external = field.value == 1;
      }
      break;
    default:
      if (schema::is_typed_data_field(field.number) && !fields.typed) {
        fields.typed_field = static_cast<std::uint8_t>(field.number);
        fields.typed = field.payload_span(ctx_.file);
      }
  }
}

// Appends the dims a field carries (one varint, or packed); a negative one is a problem and is
// left out.
void TensorCollector::read_dims(const CursorField& field) {
  const auto take = [&](std::uint64_t v) {
    const auto d = wire::as_int64(v);
    if (d < 0) {
      fail(Error(ErrorKind::bad_tensor, "negative dimension " + std::to_string(d),
                 field.tag_offset(ctx_.file), "dims"));
      return;
    }
    dims_.push_back(d);
  };
  if (field.type == wire::WireType::varint) {
    take(field.value);
  } else if (field.type == wire::WireType::len) {
    for_each_varint(ctx_.file, field.payload_span(ctx_.file), take);
  }
}

// One external_data StringStringEntryProto. Later entries with the same key win, as onnx's loader
// reads them.
void TensorCollector::read_external_entry(const CursorField& entry) {
  std::string_view key;
  std::string_view value;
  for_each_field(ctx_.file, entry.payload_span(ctx_.file), [&](const CursorField& field) {
    if (field.type != wire::WireType::len) return;
    if (field.number == schema::StringStringEntryProto::kKey) key = wire::as_string(field.bytes());
    if (field.number == schema::StringStringEntryProto::kValue) {
      value = wire::as_string(field.bytes());
    }
  });
  const std::uint64_t at = entry.tag_offset(ctx_.file);
  ExternalRef& ref = fields.external;
  try {
    if (key == "location") ref.location = value;
    if (key == "offset") ref.offset = parse_decimal(key, value, at);
    if (key == "length") ref.length = parse_decimal(key, value, at);
  } catch (const Error& e) {
    fail(e);
  }
}

bool read_common_tensor(const std::byte* file, Span span, std::uint64_t page_size,
                        PodTable<std::int64_t>& dims, TensorFields& out) {
  using cursor_detail::take_varint;
  constexpr auto tag = [](std::uint32_t number, wire::WireType type) {
    return static_cast<std::uint8_t>(wire::make_tag(number, type));
  };
  constexpr std::uint8_t kDimsTag = tag(TP::kDims, wire::WireType::varint);
  constexpr std::uint8_t kDataTypeTag = tag(TP::kDataType, wire::WireType::varint);
  constexpr std::uint8_t kNameTag = tag(TP::kName, wire::WireType::len);
  constexpr std::uint8_t kRawDataTag = tag(TP::kRawData, wire::WireType::len);
  static_assert(kRawDataTag < 0x80U, "one-byte tags");
  const std::byte* p = file + span.offset;
  const std::byte* const end = p + span.length;
  const std::size_t dims_before = dims.size();
  const auto tag_is = [&](std::uint8_t expected) {
    return p != end && cursor_detail::byte_at(p) == expected;
  };
  const auto fail = [&] {
    dims.truncate(dims_before);
    return false;
  };
  // A LEN field's payload after its tag: its span, `p` moved past it.
  const auto take_len = [&](Span& payload) {
    std::uint64_t length = 0;
    if (!take_varint(p, end, length) || length > static_cast<std::uint64_t>(end - p)) return false;
    payload = {static_cast<std::uint64_t>(p - file), length};
    p += length;
    return true;
  };
  std::uint64_t value = 0;
  while (tag_is(kDimsTag)) {
    ++p;
    if (!take_varint(p, end, value)) return fail();
    dims.push_back(static_cast<std::int64_t>(value));  // 63 bits: never negative
  }
  if (tag_is(kDataTypeTag)) {
    ++p;
    if (!take_varint(p, end, value)) return fail();
    out.data_type = wire::as_int32(value);
  }
  Span payload;
  if (tag_is(kNameTag)) {
    ++p;
    if (!take_len(payload)) return fail();
    out.name = {reinterpret_cast<const char*>(file + payload.offset), payload.length};
  }
  // Where the bytes this reads end: raw_data's payload is only stepped over.
  auto read_end = static_cast<std::uint64_t>(p - file);
  if (tag_is(kRawDataTag)) {
    out.raw_tag = static_cast<std::uint64_t>(p - file);
    ++p;
    if (!take_len(payload)) return fail();
    out.raw = payload;
    read_end = payload.offset;
  }
  const std::uint64_t first_page = span.offset & ~(page_size - 1);
  if (p != end || read_end - first_page > page_size) return fail();
  return true;
}

}  // namespace onnxmap::detail
