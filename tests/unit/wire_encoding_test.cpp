// The worked examples of the protobuf encoding documentation, and the scalar encodings.

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "onnxmap/schema.hpp"
#include "schema/fields.hpp"
#include "test_support.hpp"
#include "wire/cursor.hpp"

namespace onnxmap::wire {
namespace {

using test::bytes_of;

std::vector<std::byte> encode_varint(std::uint64_t v) {
  Writer w;
  w.varint(v);
  return w.take();
}

std::uint64_t decode_varint(const std::vector<std::byte>& bytes) {
  std::size_t pos = 0;
  const std::uint64_t v = read_varint(bytes, pos);
  EXPECT_EQ(pos, bytes.size());
  return v;
}

TEST(WireEncoding, VarintWorkedExamples) {
  EXPECT_EQ(encode_varint(1), bytes_of({0x01}));
  EXPECT_EQ(encode_varint(150), bytes_of({0x96, 0x01}));
  EXPECT_EQ(encode_varint(300), bytes_of({0xAC, 0x02}));
  EXPECT_EQ(decode_varint(bytes_of({0x01})), 1U);
  EXPECT_EQ(decode_varint(bytes_of({0x96, 0x01})), 150U);
  EXPECT_EQ(decode_varint(bytes_of({0xAC, 0x02})), 300U);
}

TEST(WireEncoding, VarintExtremes) {
  EXPECT_EQ(encode_varint(0), bytes_of({0x00}));
  const auto max = std::numeric_limits<std::uint64_t>::max();
  const auto encoded = encode_varint(max);
  EXPECT_EQ(encoded, bytes_of({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}));
  EXPECT_EQ(decode_varint(encoded), max);
  EXPECT_EQ(varint_size(0), 1U);
  EXPECT_EQ(varint_size(127), 1U);
  EXPECT_EQ(varint_size(128), 2U);
  EXPECT_EQ(varint_size(max), 10U);
  // A redundant, over-long encoding of 1 is still 1 (libprotobuf accepts it too).
  EXPECT_EQ(decode_varint(bytes_of({0x81, 0x80, 0x80, 0x00})), 1U);
}

TEST(WireEncoding, FieldWithVarint) {
  Writer w;
  w.field_varint(1, 150);
  EXPECT_EQ(w.bytes(), bytes_of({0x08, 0x96, 0x01}));
}

TEST(WireEncoding, StringField) {
  Writer w;
  w.field_string(2, "testing");
  EXPECT_EQ(w.bytes(), bytes_of({0x12, 0x07, 0x74, 0x65, 0x73, 0x74, 0x69, 0x6e, 0x67}));
}

TEST(WireEncoding, EmbeddedMessage) {
  Writer inner;
  inner.field_varint(1, 150);
  Writer outer;
  outer.field_bytes(3, inner.bytes());
  EXPECT_EQ(outer.bytes(), bytes_of({0x1a, 0x03, 0x08, 0x96, 0x01}));
}

TEST(WireEncoding, PackedRepeated) {
  Writer w;
  const std::uint64_t values[] = {3, 270, 86942};
  w.field_packed_varints(4, values);
  const auto expected = bytes_of({0x22, 0x06, 0x03, 0x8E, 0x02, 0x9E, 0xA7, 0x05});
  EXPECT_EQ(w.bytes(), expected);

  Cursor r(expected);
  const Field& f = r.field();
  ASSERT_TRUE(r.next());
  EXPECT_EQ(f.number, 4U);
  EXPECT_EQ(f.type, WireType::len);
  std::vector<std::uint64_t> read;
  EXPECT_TRUE(for_each_varint(f, 0, [&](std::uint64_t v) { read.push_back(v); }));
  EXPECT_EQ(read, (std::vector<std::uint64_t>{3, 270, 86942}));
  EXPECT_FALSE(r.next());
}

TEST(WireEncoding, ZigZag) {
  EXPECT_EQ(zigzag_encode32(0), 0U);
  EXPECT_EQ(zigzag_encode32(-1), 1U);
  EXPECT_EQ(zigzag_encode32(1), 2U);
  EXPECT_EQ(zigzag_encode32(-2), 3U);
  EXPECT_EQ(zigzag_encode32(2147483647), 4294967294U);
  EXPECT_EQ(zigzag_encode32(std::numeric_limits<std::int32_t>::min()), 4294967295U);
  EXPECT_EQ(zigzag_encode64(0), 0U);
  EXPECT_EQ(zigzag_encode64(-1), 1U);
  EXPECT_EQ(zigzag_encode64(1), 2U);
  EXPECT_EQ(zigzag_encode64(-2), 3U);
  EXPECT_EQ(zigzag_encode64(std::numeric_limits<std::int64_t>::max()),
            std::numeric_limits<std::uint64_t>::max() - 1);
  EXPECT_EQ(zigzag_encode64(std::numeric_limits<std::int64_t>::min()),
            std::numeric_limits<std::uint64_t>::max());
  for (const std::int32_t v : {0, -1, 1, -2, 2147483647, -2147483647 - 1}) {
    EXPECT_EQ(zigzag_decode32(zigzag_encode32(v)), v);
  }
}

TEST(WireEncoding, NegativeIntsTakeTenBytes) {
  Writer w;
  w.field_int64(1, -1);
  EXPECT_EQ(w.bytes(),
            bytes_of({0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}));
  Writer w32;
  w32.field_int32(1, -1);  // int32 is sign-extended to 64 bits on the wire
  EXPECT_EQ(w32.bytes(), w.bytes());

  Cursor r(w.bytes());
  const Field& f = r.field();
  ASSERT_TRUE(r.next());
  EXPECT_EQ(as_int64(f.value), -1);
  EXPECT_EQ(as_int32(f.value), -1);
}

TEST(WireEncoding, SintFields) {
  Writer w;
  w.field_sint32(1, -2);
  w.field_sint64(2, -3);
  EXPECT_EQ(w.bytes(), bytes_of({0x08, 0x03, 0x10, 0x05}));
}

TEST(WireEncoding, FixedAndFloatingLittleEndian) {
  Writer w;
  w.field_fixed32(1, 0x01020304U);
  w.field_fixed64(2, 0x0102030405060708ULL);
  w.field_float(3, 1.0F);
  w.field_double(4, -2.0);
  EXPECT_EQ(w.bytes(),
            bytes_of({0x0D, 0x04, 0x03, 0x02, 0x01,                             // field 1, I32
                      0x11, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,     // field 2, I64
                      0x1D, 0x00, 0x00, 0x80, 0x3F,                             // 1.0f
                      0x21, 0,    0,    0,    0,    0,    0,    0x00, 0xC0}));  // -2.0
  Cursor r(w.bytes());
  const Field& f = r.field();
  ASSERT_TRUE(r.next());
  EXPECT_EQ(f.value, 0x01020304U);
  ASSERT_TRUE(r.next());
  EXPECT_EQ(f.value, 0x0102030405060708ULL);
  ASSERT_TRUE(r.next());
  EXPECT_EQ(as_float(static_cast<std::uint32_t>(f.value)), 1.0F);
  ASSERT_TRUE(r.next());
  EXPECT_EQ(as_double(f.value), -2.0);
}

TEST(WireEncoding, SemVerPacking) {
  const ModelVersion v = ModelVersion::semver(1, 2, 345);
  EXPECT_EQ(static_cast<std::uint64_t>(v.raw), 0x0001000200000159ULL);
  EXPECT_TRUE(v.is_semver());
  EXPECT_EQ(v.to_string(), "1.2.345");
  EXPECT_FALSE(ModelVersion{7}.is_semver());
  EXPECT_EQ(ModelVersion{7}.to_string(), "7");
}

TEST(WireEncoding, ModelProtoOpening) {
  // ir_version 7 then a 12-byte producer_name, as exporters write the first bytes of a model.
  std::vector<std::byte> model = bytes_of({0x08, 0x07, 0x12, 0x0C});
  const auto producer = bytes_of("backend-test");
  model.insert(model.end(), producer.begin(), producer.end());

  Writer w;
  w.field_int64(schema::ModelProto::kIrVersion, 7);
  w.field_string(schema::ModelProto::kProducerName, "backend-test");
  EXPECT_EQ(w.bytes(), model);

  Cursor r(model, 100);
  const Field& f = r.field();
  ASSERT_TRUE(r.next());
  EXPECT_EQ(f.number, schema::ModelProto::kIrVersion);
  EXPECT_EQ(f.type, WireType::varint);
  EXPECT_EQ(f.value, 7U);
  EXPECT_EQ(r.tag_offset(), 100U);
  ASSERT_TRUE(r.next());
  EXPECT_EQ(f.number, schema::ModelProto::kProducerName);
  EXPECT_EQ(f.text(), "backend-test");
  EXPECT_EQ(r.tag_offset(), 102U);
  EXPECT_EQ(r.payload_span().offset, 104U);
  EXPECT_FALSE(r.next());
  EXPECT_EQ(r.position(), 116U);
}

}  // namespace
}  // namespace onnxmap::wire
