#pragma once
// The protobuf wire format, read and written by hand: no libprotobuf, no 2 GB limit.
//
// Reading: `Reader` walks the fields of one message's bytes, yielding (field number, wire type,
// value or byte span) without copying. Every decode is bounds-checked and throws onnxmap::Error
// with the absolute byte offset of the problem. Writing: `Writer` appends encoded fields to a
// byte buffer.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "onnxmap/error.hpp"

namespace onnxmap::wire {

using Bytes = std::span<const std::byte>;

enum class WireType : std::uint8_t {
  varint = 0,
  i64 = 1,
  len = 2,
  start_group = 3,  // deprecated groups: skipped, never produced by ONNX
  end_group = 4,
  i32 = 5,
};

inline constexpr std::uint32_t kMaxFieldNumber = (1U << 29U) - 1;
inline constexpr std::size_t kMaxVarintBytes = 10;
// libprotobuf's default recursion limit is 100; groups never occur in ONNX files, so a smaller
// limit costs nothing and bounds the work a hostile file can ask for.
inline constexpr int kDefaultGroupDepthLimit = 64;

// --- Scalar encodings -------------------------------------------------------------------------

[[nodiscard]] constexpr std::uint64_t zigzag_encode64(std::int64_t v) noexcept {
  return (static_cast<std::uint64_t>(v) << 1U) ^ static_cast<std::uint64_t>(v >> 63);
}
[[nodiscard]] constexpr std::int64_t zigzag_decode64(std::uint64_t v) noexcept {
  return static_cast<std::int64_t>((v >> 1U) ^ (~(v & 1U) + 1U));
}
[[nodiscard]] constexpr std::uint32_t zigzag_encode32(std::int32_t v) noexcept {
  return (static_cast<std::uint32_t>(v) << 1U) ^ static_cast<std::uint32_t>(v >> 31);
}
[[nodiscard]] constexpr std::int32_t zigzag_decode32(std::uint32_t v) noexcept {
  return static_cast<std::int32_t>((v >> 1U) ^ (~(v & 1U) + 1U));
}

// int32 and int64 travel as two's complement in a varint (a negative int32 is sign-extended to 64
// bits and takes 10 bytes). Reading an int32 keeps the low 32 bits, as libprotobuf does.
[[nodiscard]] constexpr std::int64_t as_int64(std::uint64_t v) noexcept {
  return static_cast<std::int64_t>(v);
}
[[nodiscard]] constexpr std::int32_t as_int32(std::uint64_t v) noexcept {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
}
[[nodiscard]] constexpr std::uint64_t from_int64(std::int64_t v) noexcept {
  return static_cast<std::uint64_t>(v);
}
[[nodiscard]] constexpr std::uint64_t from_int32(std::int32_t v) noexcept {
  return static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
}
[[nodiscard]] constexpr float as_float(std::uint32_t bits) noexcept {
  return std::bit_cast<float>(bits);
}
[[nodiscard]] constexpr double as_double(std::uint64_t bits) noexcept {
  return std::bit_cast<double>(bits);
}

[[nodiscard]] constexpr std::size_t varint_size(std::uint64_t v) noexcept {
  std::size_t n = 1;
  while (v >= 0x80U) {
    v >>= 7U;
    ++n;
  }
  return n;
}

[[nodiscard]] constexpr std::uint64_t make_tag(std::uint32_t number, WireType type) noexcept {
  return (static_cast<std::uint64_t>(number) << 3U) | static_cast<std::uint64_t>(type);
}

// --- Decoding primitives ----------------------------------------------------------------------
// `pos` indexes into `bytes` and advances past the value; `base` is the absolute file offset of
// bytes[0], used only to report where a problem is.

// Varints of more than one byte, and every error case.
[[nodiscard]] std::uint64_t read_varint_slow(Bytes bytes, std::size_t& pos, std::uint64_t base);
// Most tags and lengths fit one byte: that case stays inline, the rest goes out of line.
[[nodiscard]] inline std::uint64_t read_varint(Bytes bytes, std::size_t& pos,
                                               std::uint64_t base = 0) {
  if (pos < bytes.size()) {
    const auto first = static_cast<std::uint8_t>(bytes[pos]);
    if (first < 0x80U) {
      ++pos;
      return first;
    }
  }
  return read_varint_slow(bytes, pos, base);
}
[[nodiscard]] std::uint32_t read_fixed32(Bytes bytes, std::size_t& pos, std::uint64_t base = 0);
[[nodiscard]] std::uint64_t read_fixed64(Bytes bytes, std::size_t& pos, std::uint64_t base = 0);

// One field as it appears on the wire.
struct Field {
  std::uint32_t number = 0;
  WireType type = WireType::varint;
  std::uint64_t value = 0;           // varint, i32 and i64: the raw value bits
  Bytes bytes;                       // len: the payload; start_group: the group's contents
  std::uint64_t offset = 0;          // absolute offset of the tag
  std::uint64_t payload_offset = 0;  // absolute offset of the value or payload
};

// Walks the fields of one message. Groups (wire types 3/4) are skipped up to their matching end
// tag, as libprotobuf skips them as unknown fields; a stray end tag, wire types 6 and 7, field
// number 0 and anything that runs past the end raise onnxmap::Error.
class Reader {
 public:
  explicit Reader(Bytes bytes, std::uint64_t base = 0,
                  int group_depth_limit = kDefaultGroupDepthLimit) noexcept
      : bytes_(bytes), base_(base), group_depth_limit_(group_depth_limit) {}

  // Reads the next field into `field`; false at the end of the message.
  [[nodiscard]] bool next(Field& field) {
    if (pos_ >= bytes_.size()) return false;
    // The common case, kept inline: a one-byte tag with a valid field number, then a one-byte
    // length that fits in the message or a one-byte varint. Everything else, errors included,
    // takes the general path, which re-reads the field from its tag.
    const std::size_t left = bytes_.size() - pos_;
    const auto tag = static_cast<std::uint8_t>(bytes_[pos_]);
    if (left >= 2 && tag >= 8 && tag < 0x80U) {
      const auto second = static_cast<std::uint8_t>(bytes_[pos_ + 1]);
      const auto type = static_cast<WireType>(tag & 7U);
      if (second < 0x80U && type == WireType::len && second <= left - 2) {
        set_short_field(field, tag, 0, bytes_.subspan(pos_ + 2, second));
        pos_ += 2U + second;
        return true;
      }
      if (second < 0x80U && type == WireType::varint) {
        set_short_field(field, tag, second, {});
        pos_ += 2;
        return true;
      }
    }
    return next_general(field);
  }

  [[nodiscard]] std::uint64_t position() const noexcept { return base_ + pos_; }

 private:
  void set_short_field(Field& field, std::uint8_t tag, std::uint64_t value, Bytes payload) const {
    field.number = tag >> 3U;
    field.type = static_cast<WireType>(tag & 7U);
    field.offset = base_ + pos_;
    field.payload_offset = field.offset + 2;
    field.value = value;
    field.bytes = payload;
  }
  // Every field the inline path of next() does not take, and every error.
  bool next_general(Field& field);
  // Reads a tag at pos_, validating field number and wire type.
  void read_tag(std::uint32_t& number, WireType& type);
  // Reads a length and returns the payload it announces, checked against the end.
  Bytes read_len();
  // Advances pos_ past a value of `type` (not a group).
  void skip_value(WireType type);
  // Advances pos_ past the rest of a group opened by field `number`; returns its contents.
  Bytes skip_group(std::uint32_t number);

  Bytes bytes_;
  std::uint64_t base_;
  std::size_t pos_ = 0;
  int group_depth_limit_;
};

// --- Repeated scalars, packed or not ----------------------------------------------------------
// A repeated scalar may arrive packed (one LEN field) or unpacked (one field per element), and a
// reader must accept both. Each helper calls `fn` for every element the field carries and returns
// false when the wire type fits neither form (libprotobuf then treats the field as unknown).

template <class Fn>
bool for_each_varint(const Field& field, Fn&& fn) {
  if (field.type == WireType::varint) {
    fn(field.value);
    return true;
  }
  if (field.type != WireType::len) return false;
  std::size_t pos = 0;
  while (pos < field.bytes.size()) fn(read_varint(field.bytes, pos, field.payload_offset));
  return true;
}

template <class Fn>
bool for_each_fixed32(const Field& field, Fn&& fn) {
  if (field.type == WireType::i32) {
    fn(static_cast<std::uint32_t>(field.value));
    return true;
  }
  if (field.type != WireType::len) return false;
  std::size_t pos = 0;
  while (pos < field.bytes.size()) fn(read_fixed32(field.bytes, pos, field.payload_offset));
  return true;
}

template <class Fn>
bool for_each_fixed64(const Field& field, Fn&& fn) {
  if (field.type == WireType::i64) {
    fn(field.value);
    return true;
  }
  if (field.type != WireType::len) return false;
  std::size_t pos = 0;
  while (pos < field.bytes.size()) fn(read_fixed64(field.bytes, pos, field.payload_offset));
  return true;
}

// Number of varints in a packed payload, without decoding them (each ends at a byte < 0x80).
[[nodiscard]] std::size_t count_packed_varints(Bytes payload) noexcept;

[[nodiscard]] inline std::string_view as_string(Bytes bytes) noexcept {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// --- Writing ----------------------------------------------------------------------------------

class Writer {
 public:
  void varint(std::uint64_t v);
  void fixed32(std::uint32_t v);
  void fixed64(std::uint64_t v);
  void tag(std::uint32_t number, WireType type);
  void raw(Bytes bytes);

  // Whole fields: tag then value.
  void field_varint(std::uint32_t number, std::uint64_t v);
  void field_int64(std::uint32_t number, std::int64_t v) { field_varint(number, from_int64(v)); }
  void field_int32(std::uint32_t number, std::int32_t v) { field_varint(number, from_int32(v)); }
  void field_sint64(std::uint32_t number, std::int64_t v) {
    field_varint(number, zigzag_encode64(v));
  }
  void field_sint32(std::uint32_t number, std::int32_t v) {
    field_varint(number, zigzag_encode32(v));
  }
  void field_bool(std::uint32_t number, bool v) { field_varint(number, v ? 1 : 0); }
  void field_fixed32(std::uint32_t number, std::uint32_t v);
  void field_fixed64(std::uint32_t number, std::uint64_t v);
  void field_float(std::uint32_t number, float v) {
    field_fixed32(number, std::bit_cast<std::uint32_t>(v));
  }
  void field_double(std::uint32_t number, double v) {
    field_fixed64(number, std::bit_cast<std::uint64_t>(v));
  }
  void field_bytes(std::uint32_t number, Bytes payload);
  void field_string(std::uint32_t number, std::string_view text);
  // The tag and length of a LEN field whose payload the caller writes next (nested messages).
  void field_len_header(std::uint32_t number, std::uint64_t length);
  void field_packed_varints(std::uint32_t number, std::span<const std::uint64_t> values);
  void field_packed_fixed32(std::uint32_t number, std::span<const std::uint32_t> values);
  void field_packed_fixed64(std::uint32_t number, std::span<const std::uint64_t> values);

  [[nodiscard]] const std::vector<std::byte>& bytes() const noexcept { return out_; }
  [[nodiscard]] std::vector<std::byte> take() noexcept { return std::move(out_); }
  void clear() noexcept { out_.clear(); }

 private:
  std::vector<std::byte> out_;
};

}  // namespace onnxmap::wire
