#include "wire/wire.hpp"

namespace onnxmap::wire {

void Writer::varint(std::uint64_t v) {
  while (v >= 0x80U) {
    out_.push_back(static_cast<std::byte>((v & 0x7FU) | 0x80U));
    v >>= 7U;
  }
  out_.push_back(static_cast<std::byte>(v));
}

void Writer::fixed32(std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<std::byte>((v >> (8U * i)) & 0xFFU));
}

void Writer::fixed64(std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<std::byte>((v >> (8U * i)) & 0xFFU));
}

void Writer::tag(std::uint32_t number, WireType type) {
  varint(make_tag(number, type));
}

void Writer::raw(Bytes bytes) {
  out_.insert(out_.end(), bytes.begin(), bytes.end());
}

void Writer::field_varint(std::uint32_t number, std::uint64_t v) {
  tag(number, WireType::varint);
  varint(v);
}

void Writer::field_fixed32(std::uint32_t number, std::uint32_t v) {
  tag(number, WireType::i32);
  fixed32(v);
}

void Writer::field_fixed64(std::uint32_t number, std::uint64_t v) {
  tag(number, WireType::i64);
  fixed64(v);
}

void Writer::field_len_header(std::uint32_t number, std::uint64_t length) {
  tag(number, WireType::len);
  varint(length);
}

void Writer::field_bytes(std::uint32_t number, Bytes payload) {
  field_len_header(number, payload.size());
  raw(payload);
}

void Writer::field_string(std::uint32_t number, std::string_view text) {
  field_bytes(number, std::as_bytes(std::span(text.data(), text.size())));
}

void Writer::field_packed_varints(std::uint32_t number, std::span<const std::uint64_t> values) {
  std::uint64_t length = 0;
  for (const std::uint64_t v : values) length += varint_size(v);
  field_len_header(number, length);
  for (const std::uint64_t v : values) varint(v);
}

void Writer::field_packed_fixed32(std::uint32_t number, std::span<const std::uint32_t> values) {
  field_len_header(number, 4 * static_cast<std::uint64_t>(values.size()));
  for (const std::uint32_t v : values) fixed32(v);
}

void Writer::field_packed_fixed64(std::uint32_t number, std::span<const std::uint64_t> values) {
  field_len_header(number, 8 * static_cast<std::uint64_t>(values.size()));
  for (const std::uint64_t v : values) fixed64(v);
}

}  // namespace onnxmap::wire
