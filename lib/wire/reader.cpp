#include <string>

#include "wire/wire.hpp"

namespace onnxmap::wire {

std::uint64_t read_varint_slow(Bytes bytes, std::size_t& pos, std::uint64_t base) {
  const std::size_t start = pos;
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < kMaxVarintBytes; ++i) {
    if (pos >= bytes.size()) {
      throw Error(ErrorKind::truncated, "input ends inside a varint", base + start);
    }
    const auto byte = static_cast<std::uint8_t>(bytes[pos++]);
    // The tenth byte holds only the top bit of a uint64; libprotobuf ignores the rest of it.
    value |= static_cast<std::uint64_t>(byte & 0x7FU) << (7U * i);
    if ((byte & 0x80U) == 0) return value;
  }
  throw Error(ErrorKind::bad_varint, "varint longer than 10 bytes", base + start);
}

namespace {

template <class Int>
Int read_little_endian(Bytes bytes, std::size_t& pos, std::uint64_t base) {
  if (pos > bytes.size() || bytes.size() - pos < sizeof(Int)) {
    throw Error(ErrorKind::truncated,
                "input ends inside a " + std::to_string(sizeof(Int)) + "-byte fixed value",
                base + pos);
  }
  Int value = 0;
  for (std::size_t i = 0; i < sizeof(Int); ++i) {
    value |= static_cast<Int>(static_cast<std::uint8_t>(bytes[pos + i])) << (8U * i);
  }
  pos += sizeof(Int);
  return value;
}

}  // namespace

std::uint32_t read_fixed32(Bytes bytes, std::size_t& pos, std::uint64_t base) {
  return read_little_endian<std::uint32_t>(bytes, pos, base);
}

std::uint64_t read_fixed64(Bytes bytes, std::size_t& pos, std::uint64_t base) {
  return read_little_endian<std::uint64_t>(bytes, pos, base);
}

std::size_t count_packed_varints(Bytes payload) noexcept {
  std::size_t count = 0;
  for (const std::byte b : payload) count += (static_cast<std::uint8_t>(b) & 0x80U) == 0 ? 1 : 0;
  return count;
}

void Reader::read_tag(std::uint32_t& number, WireType& type) {
  const std::size_t start = pos_;
  const std::uint64_t tag = read_varint(bytes_, pos_, base_);
  const std::uint64_t wire = tag & 7U;
  const std::uint64_t field_number = tag >> 3U;
  if (field_number == 0 || field_number > kMaxFieldNumber) {
    throw Error(ErrorKind::bad_field_number,
                "field number " + std::to_string(field_number) + " outside 1..536870911",
                base_ + start);
  }
  if (wire == 6 || wire == 7) {
    throw Error(ErrorKind::bad_wire_type, "wire type " + std::to_string(wire) + " does not exist",
                base_ + start);
  }
  number = static_cast<std::uint32_t>(field_number);
  type = static_cast<WireType>(wire);
}

Bytes Reader::read_len() {
  const std::size_t start = pos_;
  const std::uint64_t length = read_varint(bytes_, pos_, base_);
  if (length > bytes_.size() - pos_) {
    throw Error(ErrorKind::out_of_bounds,
                "length " + std::to_string(length) + " runs past the end of its message (" +
                    std::to_string(bytes_.size() - pos_) + " bytes left)",
                base_ + start);
  }
  const Bytes payload = bytes_.subspan(pos_, static_cast<std::size_t>(length));
  pos_ += payload.size();
  return payload;
}

void Reader::skip_value(WireType type) {
  switch (type) {
    case WireType::varint: (void)read_varint(bytes_, pos_, base_); return;
    case WireType::i64: (void)read_fixed64(bytes_, pos_, base_); return;
    case WireType::i32: (void)read_fixed32(bytes_, pos_, base_); return;
    case WireType::len: (void)read_len(); return;
    case WireType::start_group:
    case WireType::end_group: break;
  }
}

Bytes Reader::skip_group(std::uint32_t number) {
  // Iterative, with an explicit stack of open group numbers, so nesting costs no native stack.
  std::vector<std::uint32_t> open{number};
  const std::size_t contents_start = pos_;
  while (true) {
    if (pos_ >= bytes_.size()) {
      throw Error(ErrorKind::truncated,
                  "group " + std::to_string(open.back()) + " has no end-group tag",
                  base_ + contents_start);
    }
    const std::size_t tag_start = pos_;
    std::uint32_t inner = 0;
    WireType type{};
    read_tag(inner, type);
    if (type == WireType::end_group) {
      if (inner != open.back()) {
        throw Error(ErrorKind::bad_wire_type,
                    "end-group tag " + std::to_string(inner) + " closes group " +
                        std::to_string(open.back()),
                    base_ + tag_start);
      }
      open.pop_back();
      if (open.empty()) return bytes_.subspan(contents_start, tag_start - contents_start);
    } else if (type == WireType::start_group) {
      if (static_cast<int>(open.size()) >= group_depth_limit_) {
        throw Error(ErrorKind::depth_limit,
                    "groups nested deeper than " + std::to_string(group_depth_limit_),
                    base_ + tag_start);
      }
      open.push_back(inner);
    } else {
      skip_value(type);
    }
  }
}

bool Reader::next_general(Field& field) {
  field.offset = base_ + pos_;
  read_tag(field.number, field.type);
  field.payload_offset = base_ + pos_;
  field.value = 0;
  field.bytes = {};
  switch (field.type) {
    case WireType::varint: field.value = read_varint(bytes_, pos_, base_); break;
    case WireType::i64: field.value = read_fixed64(bytes_, pos_, base_); break;
    case WireType::i32: field.value = read_fixed32(bytes_, pos_, base_); break;
    case WireType::len:
      field.bytes = read_len();
      field.payload_offset = position() - field.bytes.size();
      break;
    case WireType::start_group: field.bytes = skip_group(field.number); break;
    case WireType::end_group:
      throw Error(ErrorKind::bad_wire_type,
                  "end-group tag " + std::to_string(field.number) + " with no open group",
                  field.offset);
  }
  return true;
}

}  // namespace onnxmap::wire
