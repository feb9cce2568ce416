#include "index/tensor_fields.hpp"

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

std::variant<Payload, Error> locate_payload(const TensorFields& fields,
                                            std::span<const std::int64_t> dims,
                                            std::uint64_t tensor_offset,
                                            const OpenDataFile& open_data_file) {
  const auto count = element_count(dims);
  if (!count) {
    return Error(ErrorKind::bad_tensor, "the product of dims overflows 64 bits", tensor_offset,
                 "dims");
  }
  const auto type = static_cast<DataType>(fields.data_type);
  const auto expected = packed_byte_size(type, *count);
  if (!expected && element_bits(type) > 0) {
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

void TensorCollector::field(const wire::Field& field) {
  const bool is_len = field.type == wire::WireType::len;
  switch (field.number) {
    case TP::kDims: read_dims(field); break;
    case TP::kDataType:
      if (field.type == wire::WireType::varint) fields.data_type = wire::as_int32(field.value);
      break;
    case TP::kName:
      if (is_len) fields.name = field.text();
      break;
    case TP::kRawData:
      if (is_len) fields.raw = ctx_.span_of(field);
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
        fields.typed = ctx_.span_of(field);
      }
  }
}

// Appends the dims a field carries (one varint, or packed); a negative one is a problem and is
// left out.
void TensorCollector::read_dims(const wire::Field& field) {
  const auto take = [&](std::uint64_t v) {
    const auto d = wire::as_int64(v);
    if (d < 0) {
      fail(Error(ErrorKind::bad_tensor, "negative dimension " + std::to_string(d),
                 ctx_.offset_of(field.tag), "dims"));
      return;
    }
    dims_.push_back(d);
  };
  (void)wire::for_each_varint(field, ctx_.offset_of(field.payload), take);
}

// One external_data StringStringEntryProto. Later entries with the same key win, as onnx's loader
// reads them.
void TensorCollector::read_external_entry(const wire::Field& entry) {
  std::string_view key;
  std::string_view value;
  wire::Cursor cursor(ctx_.file, ctx_.span_of(entry));
  while (cursor.next()) {
    const wire::Field& field = cursor.field();
    if (field.type != wire::WireType::len) continue;
    if (field.number == schema::StringStringEntryProto::kKey) key = field.text();
    if (field.number == schema::StringStringEntryProto::kValue) value = field.text();
  }
  const std::uint64_t at = ctx_.offset_of(entry.tag);
  ExternalRef& ref = fields.external;
  try {
    if (key == "location") ref.location = value;
    if (key == "offset") ref.offset = parse_decimal(key, value, at);
    if (key == "length") ref.length = parse_decimal(key, value, at);
  } catch (const Error& e) {
    fail(e);
  }
}

bool read_common_tensor(const std::byte* file, ByteRange span, std::uint64_t page_size,
                        PodTable<std::int64_t>& dims, TensorFields& out) {
  const std::size_t dims_before = dims.size();
  const auto fail = [&] {
    dims.truncate(dims_before);
    return false;
  };
  // Where the bytes this reads end: raw_data's payload is only stepped over.
  std::uint64_t read_end = span.offset;
  std::uint32_t last = 0;  // the last field number seen: each at most once, dims excepted
  wire::Cursor cursor(file, span);
  while (cursor.next()) {
    const wire::Field& field = cursor.field();
    const bool is_len = field.type == wire::WireType::len;
    const bool is_varint = field.type == wire::WireType::varint;
    const bool in_order = field.number > last || (field.number == TP::kDims && last == TP::kDims);
    if (!in_order) return fail();
    last = field.number;
    read_end = cursor.position();
    switch (field.number) {
      // A value of another wire type is an unknown field to protobuf: the general walk skips it.
      case TP::kDims:
        if (!is_varint || field.value >> 63U != 0) return fail();
        dims.push_back(static_cast<std::int64_t>(field.value));
        break;
      case TP::kDataType:
        if (!is_varint) return fail();
        out.data_type = field.int32();
        break;
      case TP::kName:
        if (!is_len) return fail();
        out.name = field.text();
        break;
      case TP::kRawData:
        if (!is_len) return fail();
        out.raw_tag = cursor.tag_offset();
        out.raw = cursor.payload_span();
        read_end = out.raw->offset;
        break;
      default: return fail();
    }
  }
  const std::uint64_t first_page = span.offset & ~(page_size - 1);
  if (read_end - first_page > page_size) return fail();
  return true;
}

}  // namespace onnxmap::detail
