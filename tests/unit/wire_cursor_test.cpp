// The field cursor: unknown fields, groups, packed and unpacked repeated scalars, the fast and
// general decodings agreeing, and every malformed input raising onnxmap::Error with the right
// kind and byte offset.

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>

#include "test_support.hpp"
#include "wire/cursor.hpp"

namespace onnxmap::wire {
namespace {

using test::bytes_of;

// Reads every field of `bytes`; returns the number of fields seen.
std::size_t read_all(const std::vector<std::byte>& bytes, std::uint64_t base = 0) {
  Cursor r(bytes, base);
  std::size_t count = 0;
  while (r.next()) ++count;
  return count;
}

// Expects reading `bytes` (at file offset `base`) to fail with `kind` at byte `offset`.
void expect_error(const std::vector<std::byte>& bytes, ErrorKind kind, std::uint64_t offset,
                  std::uint64_t base = 0) {
  try {
    (void)read_all(bytes, base);
    FAIL() << "no error; expected " << to_string(kind);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_EQ(e.offset(), offset) << e.what();
  }
}

TEST(WireCursor, EmptyMessageHasNoFields) {
  EXPECT_EQ(read_all({}), 0U);
}

TEST(WireCursor, TruncatedVarintValue) {
  expect_error(bytes_of({0x08, 0x96}), ErrorKind::truncated, 1);
  expect_error(bytes_of({0x08, 0x96}), ErrorKind::truncated, 1001, 1000);
}

TEST(WireCursor, TruncatedTag) {
  expect_error(bytes_of({0x80}), ErrorKind::truncated, 0);
}

TEST(WireCursor, ElevenByteVarint) {
  auto bytes = bytes_of({0x08});
  for (int i = 0; i < 10; ++i) bytes.push_back(std::byte{0xFF});
  bytes.push_back(std::byte{0x01});
  expect_error(bytes, ErrorKind::bad_varint, 1);
  std::size_t pos = 1;
  EXPECT_THROW((void)read_varint(bytes, pos), Error);
}

TEST(WireCursor, LengthPastTheEnd) {
  expect_error(bytes_of({0x12, 0x05, 'a', 'b'}), ErrorKind::out_of_bounds, 1);
}

TEST(WireCursor, SixtyFourBitLengthsDoNotWrap) {
  // A length of 2^63 and one of 2^64-1: both must be rejected, never wrap around.
  expect_error(bytes_of({0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}),
               ErrorKind::out_of_bounds, 1);
  expect_error(bytes_of({0x12, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}),
               ErrorKind::out_of_bounds, 1);
  // A length over 4 GB in a small buffer.
  expect_error(bytes_of({0x12, 0x80, 0x80, 0x80, 0x80, 0x20}), ErrorKind::out_of_bounds, 1);
}

TEST(WireCursor, FieldNumberZero) {
  expect_error(bytes_of({0x00, 0x01}), ErrorKind::bad_field_number, 0);
  expect_error(bytes_of({0x08, 0x01, 0x02, 0x00}), ErrorKind::bad_field_number, 2);
}

TEST(WireCursor, FieldNumberLimits) {
  Writer w;
  w.field_varint(kMaxFieldNumber, 5);
  Cursor r(w.bytes());
  const Field& f = r.field();
  ASSERT_TRUE(r.next());
  EXPECT_EQ(f.number, kMaxFieldNumber);
  // One past the largest field number: tag (2^29 << 3) | 0.
  Writer big;
  big.varint(static_cast<std::uint64_t>(kMaxFieldNumber + 1ULL) << 3U);
  big.varint(0);
  expect_error(big.bytes(), ErrorKind::bad_field_number, 0);
}

TEST(WireCursor, WireTypesSixAndSevenRejected) {
  expect_error(bytes_of({0x0E, 0x00}), ErrorKind::bad_wire_type, 0);
  expect_error(bytes_of({0x0F, 0x00}), ErrorKind::bad_wire_type, 0);
}

TEST(WireCursor, TruncatedFixed) {
  expect_error(bytes_of({0x0D, 0x01, 0x02, 0x03}), ErrorKind::truncated, 1);
  expect_error(bytes_of({0x09, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07}), ErrorKind::truncated, 1);
}

TEST(WireCursor, UnknownFieldsOfEveryWireTypeAreWalked) {
  Writer w;
  w.field_varint(1000, 1);
  w.field_fixed64(1001, 2);
  w.field_string(1002, "x");
  w.tag(1003, WireType::start_group);
  w.field_varint(1, 1);
  w.tag(1003, WireType::end_group);
  w.field_fixed32(1004, 3);
  w.field_varint(1, 42);
  Cursor r(w.bytes());
  const Field& f = r.field();
  std::vector<std::uint32_t> numbers;
  while (r.next()) numbers.push_back(f.number);
  EXPECT_EQ(numbers, (std::vector<std::uint32_t>{1000, 1001, 1002, 1003, 1004, 1}));
}

TEST(WireCursor, GroupsSkippedToMatchingEnd) {
  Writer w;
  w.tag(5, WireType::start_group);
  w.tag(6, WireType::start_group);
  w.field_string(1, "inner");
  w.tag(6, WireType::end_group);
  w.field_varint(2, 7);
  w.tag(5, WireType::end_group);
  w.field_varint(3, 9);
  Cursor r(w.bytes());
  const Field& f = r.field();
  ASSERT_TRUE(r.next());
  EXPECT_EQ(f.type, WireType::start_group);
  EXPECT_EQ(f.number, 5U);
  // The group's contents, without its end tag.
  EXPECT_EQ(f.bytes().size(), w.bytes().size() - 1 /*start*/ - 1 /*end*/ - 2 /*field 3*/);
  ASSERT_TRUE(r.next());
  EXPECT_EQ(f.number, 3U);
  EXPECT_EQ(f.value, 9U);
}

TEST(WireCursor, UnbalancedGroups) {
  expect_error(bytes_of({0x2B, 0x08, 0x01}), ErrorKind::truncated, 1);      // start 5, no end
  expect_error(bytes_of({0x08, 0x01, 0x2C}), ErrorKind::bad_wire_type, 2);  // end 5, no start
  expect_error(bytes_of({0x2B, 0x34}), ErrorKind::bad_wire_type, 1);        // start 5, end 6
}

TEST(WireCursor, GroupDepthLimit) {
  const auto nested = [](int depth) {
    Writer w;
    for (int i = 0; i < depth; ++i) w.tag(1, WireType::start_group);
    for (int i = 0; i < depth; ++i) w.tag(1, WireType::end_group);
    return w.take();
  };
  EXPECT_EQ(read_all(nested(kGroupDepthLimit)), 1U);
  expect_error(nested(kGroupDepthLimit + 1), ErrorKind::depth_limit, kGroupDepthLimit);

  // 100 000 nested groups: an error, never a stack overflow.
  Writer deep;
  for (int i = 0; i < 100000; ++i) deep.tag(1, WireType::start_group);
  EXPECT_THROW((void)read_all(deep.bytes()), Error);
}

TEST(WireCursor, RepeatedScalarsPackedAndUnpacked) {
  Writer w;
  w.field_varint(1, 5);
  const std::uint64_t packed[] = {6, 7};
  w.field_packed_varints(1, packed);
  w.field_varint(1, 8);
  std::vector<std::uint64_t> values;
  Cursor r(w.bytes());
  const Field& f = r.field();
  while (r.next()) {
    EXPECT_TRUE(for_each_varint(f, 0, [&](std::uint64_t v) { values.push_back(v); }));
  }
  EXPECT_EQ(values, (std::vector<std::uint64_t>{5, 6, 7, 8}));
}

TEST(WireCursor, RepeatedFixedPackedAndUnpacked) {
  Writer w;
  w.field_float(4, 1.5F);
  const std::uint32_t floats[] = {std::bit_cast<std::uint32_t>(2.5F),
                                  std::bit_cast<std::uint32_t>(-3.0F)};
  w.field_packed_fixed32(4, floats);
  const std::uint64_t doubles[] = {std::bit_cast<std::uint64_t>(0.25)};
  w.field_packed_fixed64(10, doubles);
  w.field_double(10, 8.0);
  std::vector<float> f32;
  std::vector<double> f64;
  Cursor r(w.bytes());
  const Field& f = r.field();
  while (r.next()) {
    if (f.number == 4) {
      EXPECT_TRUE(for_each_fixed32(f, 0, [&](std::uint32_t v) { f32.push_back(as_float(v)); }));
    } else {
      EXPECT_TRUE(for_each_fixed64(f, 0, [&](std::uint64_t v) { f64.push_back(as_double(v)); }));
    }
  }
  EXPECT_EQ(f32, (std::vector<float>{1.5F, 2.5F, -3.0F}));
  EXPECT_EQ(f64, (std::vector<double>{0.25, 8.0}));
}

TEST(WireCursor, MismatchedWireTypeIsNotAnElement) {
  Field f{};
  f.type = WireType::i32;
  EXPECT_FALSE(for_each_varint(f, 0, [](std::uint64_t) { FAIL(); }));
  f.type = WireType::varint;
  EXPECT_FALSE(for_each_fixed32(f, 0, [](std::uint32_t) { FAIL(); }));
  EXPECT_FALSE(for_each_fixed64(f, 0, [](std::uint64_t) { FAIL(); }));
}

TEST(WireCursor, MalformedPackedPayloads) {
  // A packed varint run that ends mid-varint, and a packed float run that is not 4-byte sized.
  const auto bad_varints = bytes_of({0x0A, 0x02, 0x01, 0x80});
  Cursor r(bad_varints, 50);
  const Field& f = r.field();
  ASSERT_TRUE(r.next());
  try {
    (void)for_each_varint(f, r.payload_span().offset, [](std::uint64_t) {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::truncated);
    EXPECT_EQ(e.offset(), 53U);
  }
  const auto bad_floats = bytes_of({0x22, 0x05, 0, 0, 0x80, 0x3F, 0x00});
  Cursor r2(bad_floats);
  ASSERT_TRUE(r2.next());
  std::size_t seen = 0;
  EXPECT_THROW((void)for_each_fixed32(r2.field(), 0, [&](std::uint32_t) { ++seen; }), Error);
  EXPECT_EQ(seen, 1U);
}

// A field's meaning does not depend on how its tag and length are encoded: the inline decoding
// (one- and two-byte tags and lengths) and the general one read a message the same.
TEST(WireCursor, NonMinimalEncodingsReadTheSame) {
  // Field 2 "ab" with its tag and its length each padded to three bytes, then field 1 = 300.
  const auto padded =
      bytes_of({0x92, 0x80, 0x00, 0x82, 0x80, 0x00, 'a', 'b', 0x88, 0x80, 0x00, 0xAC, 0x02});
  Cursor r(padded, 10);
  ASSERT_TRUE(r.next());
  EXPECT_EQ(r.field().number, 2U);
  EXPECT_EQ(r.field().text(), "ab");
  EXPECT_EQ(r.tag_offset(), 10U);
  EXPECT_EQ(r.payload_span().offset, 16U);
  ASSERT_TRUE(r.next());
  EXPECT_EQ(r.field().number, 1U);
  EXPECT_EQ(r.field().value, 300U);
  EXPECT_FALSE(r.next());
  EXPECT_EQ(r.position(), 10U + padded.size());
}

TEST(WireCursor, NextByNumberStepsOverTheRest) {
  Writer w;
  w.field_string(1, "skip");
  w.field_string(2, "first");
  w.field_varint(3, 7);
  w.field_string(2, std::string(300, 'x'));  // a two-byte length
  w.field_fixed32(2, 9);                     // the number, whatever the wire type
  Cursor r(w.bytes());
  std::vector<std::size_t> sizes;
  while (r.next(2)) sizes.push_back(r.field().is_len() ? r.field().bytes().size() : 0);
  EXPECT_EQ(sizes, (std::vector<std::size_t>{5, 300, 0}));
  // Malformed bytes are an error whichever field is looked for.
  const auto bad_bytes = bytes_of({0x12, 0x01, 'a', 0x12, 0x05, 'b'});
  Cursor bad(bad_bytes);
  ASSERT_TRUE(bad.next(2));
  EXPECT_THROW((void)bad.next(2), Error);
}

TEST(WireCursor, EveryTruncationOfAValidMessageFailsCleanly) {
  Writer inner;
  inner.field_varint(1, 300);
  inner.field_string(2, "name");
  Writer w;
  w.field_int64(1, -5);
  w.field_bytes(7, inner.bytes());
  w.field_double(3, 1.0);
  w.field_fixed32(4, 9);
  const auto& full = w.bytes();
  // Cutting at a field boundary leaves a valid shorter message; anywhere else must throw.
  const std::vector<std::size_t> boundaries{0, 11, 11 + 2 + inner.bytes().size(),
                                            11 + 2 + inner.bytes().size() + 9};
  for (std::size_t cut = 0; cut < full.size(); ++cut) {
    const std::vector<std::byte> prefix(full.begin(), full.begin() + static_cast<long>(cut));
    const bool boundary = std::find(boundaries.begin(), boundaries.end(), cut) != boundaries.end();
    if (boundary) {
      EXPECT_NO_THROW((void)read_all(prefix)) << "cut at " << cut;
    } else {
      EXPECT_THROW((void)read_all(prefix), Error) << "cut at " << cut;
    }
  }
}

}  // namespace
}  // namespace onnxmap::wire
