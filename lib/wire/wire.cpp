// The out-of-line decoding primitives of wire.hpp. They live in a file of their own, not in
// cursor.cpp: the cursor is built on wire.hpp, and wire.hpp must not need the cursor's file.

#include <cstddef>
#include <cstdint>
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

}  // namespace onnxmap::wire
