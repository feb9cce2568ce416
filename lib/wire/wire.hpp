#pragma once
// The protobuf wire format, read and written by hand: no libprotobuf, no 2 GB limit.
//
// The encodings and the bounds-checked decoding primitives; reading whole fields is
// wire/cursor.hpp's. Writing: `Writer` appends encoded fields to a byte buffer.

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
