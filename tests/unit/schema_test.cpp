// The schema tables: data type traits, names, the field descriptor table, errors.

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "onnxmap/error.hpp"
#include "onnxmap/schema.hpp"
#include "schema/descriptors.hpp"

namespace onnxmap {
namespace {

TEST(Schema, DataTypeTraits) {
  EXPECT_EQ(traits(DataType::float32)->bits, 32U);
  EXPECT_EQ(traits(DataType::float16)->numpy_descr, "<f2");
  EXPECT_EQ(traits(DataType::complex128)->bits, 128U);
  EXPECT_EQ(traits(DataType::boolean)->numpy_descr, "|b1");
  EXPECT_EQ(traits(DataType::int4)->bits, 4U);
  EXPECT_EQ(traits(DataType::uint2)->bits, 2U);
  EXPECT_EQ(traits(DataType::int2)->name, "INT2");
  EXPECT_FALSE(traits(DataType::bfloat16)->numpy_native);
  EXPECT_EQ(traits(DataType::string)->bits, 0U);
  EXPECT_FALSE(traits(DataType::undefined).has_value());
  EXPECT_FALSE(traits(static_cast<DataType>(27)).has_value());
  EXPECT_EQ(to_string(static_cast<DataType>(24)), "FLOAT8E8M0");
  EXPECT_EQ(to_string(static_cast<DataType>(99)), "<unknown 99>");
  for (std::int32_t t = 1; t <= kMaxDataType; ++t) {
    ASSERT_TRUE(traits(static_cast<DataType>(t)).has_value()) << t;
  }
}

TEST(Schema, AttributeTypeNames) {
  EXPECT_EQ(to_string(AttributeType::floats), "FLOATS");
  EXPECT_EQ(to_string(AttributeType::type_protos), "TYPE_PROTOS");
  EXPECT_EQ(to_string(static_cast<AttributeType>(15)), "<unknown>");
}

TEST(Schema, IrReleases) {
  EXPECT_EQ(onnx_release_for_ir(8), "1.10.0");
  EXPECT_EQ(onnx_release_for_ir(10), "1.16.0");
  EXPECT_FALSE(onnx_release_for_ir(99).has_value());
}

TEST(Schema, DescriptorTableIsConsistent) {
  for (int k = 0; k < schema::kMessageKindCount; ++k) {
    const auto kind = static_cast<schema::MessageKind>(k);
    const schema::MessageDescriptor& message = schema::descriptor(kind);
    ASSERT_FALSE(message.fields.empty()) << message.name;
    std::set<std::uint32_t> numbers;
    for (const schema::FieldDescriptor& field : message.fields) {
      EXPECT_TRUE(numbers.insert(field.number).second) << message.name << "." << field.name;
      EXPECT_EQ(schema::find_field(kind, field.number), &field);
      EXPECT_EQ(std::string(field.json_name).find('_'), std::string::npos);
      if (field.type == schema::FieldType::message) {
        EXPECT_LT(static_cast<int>(field.message), schema::kMessageKindCount);
      }
    }
  }
  const auto* raw = schema::find_field(schema::MessageKind::TensorProto, 9);
  ASSERT_NE(raw, nullptr);
  EXPECT_STREQ(raw->name, "raw_data");
  EXPECT_STREQ(raw->json_name, "rawData");
  EXPECT_EQ(schema::TensorProto::kRawData, 9U);
  const auto* dim = schema::find_field(schema::MessageKind::TensorShapeProto, 1);
  EXPECT_EQ(dim->message, schema::MessageKind::TensorShapeProtoDimension);
  EXPECT_STREQ(schema::find_field(schema::MessageKind::TypeProto, 1)->oneof, "value");
  EXPECT_TRUE(schema::find_field(schema::MessageKind::TensorProto, 4)->packed);
  EXPECT_FALSE(schema::find_field(schema::MessageKind::TensorProto, 1)->packed);
  EXPECT_EQ(schema::find_field(schema::MessageKind::ModelProto, 99), nullptr);
}

TEST(ErrorType, MessageNamesFilePathAndOffset) {
  const Error e(ErrorKind::bad_tensor, "4096 bytes, but dims need 8192", 1234, "raw_data");
  const Error outer = e.in_context("model.onnx", "graph.initializer[3]");
  EXPECT_EQ(outer.field_path(), "graph.initializer[3].raw_data");
  EXPECT_EQ(outer.file(), "model.onnx");
  EXPECT_EQ(outer.offset(), 1234U);
  EXPECT_EQ(std::string(outer.what()),
            "model.onnx: graph.initializer[3].raw_data: 4096 bytes, but dims need 8192 "
            "(bad_tensor at byte 1234)");
  const Error indexed = Error(ErrorKind::truncated, "x", 5, "[2].name").in_context("", "node");
  EXPECT_EQ(indexed.field_path(), "node[2].name");
}

}  // namespace
}  // namespace onnxmap
