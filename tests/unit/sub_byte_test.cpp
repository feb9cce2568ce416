// unpack_sub_byte against values worked out by hand from onnx.proto's packing rule (first element
// in the low bits) and the two's complement of INT4 and INT2.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "onnxmap/error.hpp"
#include "onnxmap/sub_byte.hpp"

namespace onnxmap {
namespace {

std::vector<std::byte> bytes(std::initializer_list<unsigned> values) {
  std::vector<std::byte> out;
  for (const unsigned v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

// The first `count` elements of `packed` unpacked, as signed or unsigned integers.
std::vector<int> unpacked(DataType type, const std::vector<std::byte>& packed, std::size_t count) {
  std::vector<std::byte> out(count, std::byte{0xAA});
  unpack_sub_byte(type, packed, out);
  std::vector<int> values;
  const bool is_signed = type == DataType::int4 || type == DataType::int2;
  for (const std::byte b : out) {
    const auto u = static_cast<std::uint8_t>(b);
    values.push_back(is_signed ? static_cast<int>(static_cast<std::int8_t>(u)) : int{u});
  }
  return values;
}

TEST(SubByte, Int4SignExtends) {
  // 0xF7: low nibble 7, high nibble 0xF (-1); 0x98: 8 (-8), 9 (-7); 0x10: 0, 1.
  EXPECT_EQ(unpacked(DataType::int4, bytes({0xF7, 0x98, 0x10}), 6),
            (std::vector<int>{7, -1, -8, -7, 0, 1}));
}

TEST(SubByte, Uint4AndFloat4KeepBitPatterns) {
  EXPECT_EQ(unpacked(DataType::uint4, bytes({0xF7, 0x98}), 4), (std::vector<int>{7, 15, 8, 9}));
  // FLOAT4E2M1 0xF is -6.0 and 0x7 is 6.0: their bit patterns, not values, one per byte.
  EXPECT_EQ(unpacked(DataType::float4e2m1, bytes({0xF7, 0x21}), 4),
            (std::vector<int>{7, 15, 1, 2}));
}

TEST(SubByte, TwoBitTypes) {
  // 0xE4 = 0b11'10'01'00: elements 0, 1, 2, 3 from the low bits up.
  EXPECT_EQ(unpacked(DataType::uint2, bytes({0xE4, 0x1B}), 8),
            (std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0}));
  EXPECT_EQ(unpacked(DataType::int2, bytes({0xE4}), 4), (std::vector<int>{0, 1, -2, -1}));
}

TEST(SubByte, OddCountLeavesTheLastHalfByte) {
  // Three INT4 elements take two bytes; the high nibble of the last byte is padding.
  EXPECT_EQ(unpacked(DataType::int4, bytes({0x21, 0xF3}), 3), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(unpacked(DataType::uint2, bytes({0xFF}), 1), (std::vector<int>{3}));
  EXPECT_TRUE(unpacked(DataType::int4, {}, 0).empty());
}

TEST(SubByte, RefusesShortInputBeforeWriting) {
  std::vector<std::byte> out(5, std::byte{0xAA});
  try {
    unpack_sub_byte(DataType::uint4, bytes({0x12, 0x34}), out);
    FAIL() << "5 UINT4 elements from 2 bytes";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(e.detail().find("need 3 bytes"), std::string::npos) << e.detail();
  }
  for (const std::byte b : out) EXPECT_EQ(b, std::byte{0xAA});
}

TEST(SubByte, RefusesOtherTypes) {
  std::vector<std::byte> out(1);
  for (const auto type : {DataType::float32, DataType::uint8, DataType::float8e4m3fn,
                          DataType::string, DataType::undefined, static_cast<DataType>(99)}) {
    try {
      unpack_sub_byte(type, bytes({0x12}), out);
      FAIL() << static_cast<int>(type);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(e.detail().find("not a sub-byte type"), std::string::npos) << e.detail();
    }
  }
}

}  // namespace
}  // namespace onnxmap
