// The canonical JSON dump on hand-built bytes: what python3-onnx cannot write, checked against
// the JSON protobuf's MessageToDict gives for the same bytes (worked out by its rules).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model_builder.hpp"
#include "onnxmap/dump.hpp"

namespace onnxmap {
namespace {

using test::message;
using test::sub;
using MK = schema::MessageKind;

nlohmann::json dump(const std::vector<std::byte>& bytes, MK kind = MK::ModelProto,
                    const DumpOptions& options = {}) {
  return nlohmann::json::parse(dump_json(bytes, kind, options));
}

TEST(Dump, ScalarsAndNames) {
  const auto j = dump(message([](wire::Writer& m) {
    m.field_int64(schema::ModelProto::kIrVersion, 14);
    m.field_int64(schema::ModelProto::kModelVersion, -1);
    m.field_string(schema::ModelProto::kProducerName, "tab\there \"q\" \xff");
  }));
  EXPECT_EQ(j["irVersion"], "14");  // int64 as a string
  EXPECT_EQ(j["modelVersion"], "-1");
  EXPECT_EQ(j["producerName"], "tab\there \"q\" \xEF\xBF\xBD");  // invalid UTF-8 replaced
  EXPECT_FALSE(j.contains("graph"));
}

TEST(Dump, TensorValues) {
  using TP = schema::TensorProto;
  const auto j = dump(message([](wire::Writer& t) {
                        t.field_int64(TP::kDims, 2);
                        const std::uint64_t dims[] = {3};
                        t.field_packed_varints(TP::kDims, dims);  // unpacked then packed
                        t.field_int32(TP::kDataType, -5);         // int32 as a number
                        t.field_float(TP::kFloatData, std::numeric_limits<float>::quiet_NaN());
                        t.field_float(TP::kFloatData, -std::numeric_limits<float>::infinity());
                        t.field_float(TP::kFloatData, 0.1F);
                        t.field_varint(TP::kUint64Data, UINT64_MAX);
                        t.field_bytes(TP::kRawData, test::float_bytes({1.0F}));
                        t.field_int32(TP::kDataLocation, 1);
                        t.field_int32(TP::kDataLocation, 7);  // not in the enum: unknown
                      }),
                      MK::TensorProto);
  EXPECT_EQ(j["dims"], nlohmann::json::array({"2", "3"}));
  EXPECT_EQ(j["dataType"], -5);
  EXPECT_EQ(j["floatData"][0], "NaN");
  EXPECT_EQ(j["floatData"][1], "-Infinity");
  EXPECT_FLOAT_EQ(j["floatData"][2].get<float>(), 0.1F);
  EXPECT_EQ(j["uint64Data"][0], "18446744073709551615");
  EXPECT_EQ(j["rawData"], "AACAPw==");
  EXPECT_EQ(j["dataLocation"], "EXTERNAL");
}

TEST(Dump, MergesSingularMessagesAndKeepsLastScalar) {
  const auto j = dump(message([](wire::Writer& m) {
    sub(m, schema::ModelProto::kGraph, [](wire::Writer& g) {
      g.field_string(schema::GraphProto::kName, "early");
      sub(g, schema::GraphProto::kNode,
          [](wire::Writer& n) { n.field_string(schema::NodeProto::kOpType, "A"); });
    });
    m.field_string(schema::ModelProto::kDomain, "a");
    m.field_string(schema::ModelProto::kDomain, "b");
    sub(m, schema::ModelProto::kGraph, [](wire::Writer& g) {
      g.field_string(schema::GraphProto::kName, "late");
      sub(g, schema::GraphProto::kNode,
          [](wire::Writer& n) { n.field_string(schema::NodeProto::kOpType, "B"); });
    });
  }));
  EXPECT_EQ(j["domain"], "b");
  EXPECT_EQ(j["graph"]["name"], "late");
  ASSERT_EQ(j["graph"]["node"].size(), 2U);
  EXPECT_EQ(j["graph"]["node"][1]["opType"], "B");
}

TEST(Dump, OneofMembersClearEachOther) {
  using TP = schema::TypeProto;
  const auto j =
      dump(message([](wire::Writer& t) {
             sub(t, TP::kTensorType,
                 [](wire::Writer& x) { x.field_int32(schema::TypeProtoTensor::kElemType, 1); });
             sub(t, TP::kSequenceType, [](wire::Writer&) {});
             sub(t, TP::kTensorType,
                 [](wire::Writer& x) { x.field_int32(schema::TypeProtoTensor::kElemType, 7); });
           }),
           MK::TypeProto);
  EXPECT_FALSE(j.contains("sequenceType"));
  EXPECT_EQ(j["tensorType"]["elemType"], 7);
}

TEST(Dump, UnknownFieldsAndMismatchedWireTypesAreSkipped) {
  const auto j = dump(message([](wire::Writer& m) {
    m.field_fixed64(schema::ModelProto::kIrVersion, 5);  // ir_version with the wrong wire type
    m.field_string(999, "unknown");
    m.tag(1000, wire::WireType::start_group);
    m.tag(1000, wire::WireType::end_group);
    m.field_string(schema::ModelProto::kProducerName, "p");
  }));
  EXPECT_EQ(j, nlohmann::json({{"producerName", "p"}}));
}

TEST(Dump, NewerIrFields) {
  // FunctionProto.attribute_proto (IR 9) and NodeProto.device_configurations (IR 11).
  const auto j =
      dump(message([](wire::Writer& f) {
             f.field_string(schema::FunctionProto::kName, "Fn");
             sub(f, schema::FunctionProto::kAttributeProto, [](wire::Writer& a) {
               a.field_string(schema::AttributeProto::kName, "beta");
               a.field_int32(schema::AttributeProto::kType, 7);
               a.field_int64(schema::AttributeProto::kInts, 1);
             });
             sub(f, schema::FunctionProto::kNode, [](wire::Writer& n) {
               sub(n, schema::NodeProto::kDeviceConfigurations, [](wire::Writer& d) {
                 d.field_string(schema::NodeDeviceConfigurationProto::kConfigurationId, "tp2");
                 d.field_int32(schema::NodeDeviceConfigurationProto::kPipelineStage, 1);
               });
             });
           }),
           MK::FunctionProto);
  EXPECT_EQ(j["attributeProto"][0]["type"], "INTS");
  EXPECT_EQ(j["attributeProto"][0]["ints"], nlohmann::json::array({"1"}));
  EXPECT_EQ(j["node"][0]["deviceConfigurations"][0]["configurationId"], "tp2");
  EXPECT_EQ(j["node"][0]["deviceConfigurations"][0]["pipelineStage"], 1);
}

TEST(Dump, OmitData) {
  DumpOptions options;
  options.omit_data = true;
  const auto j =
      dump(message(test::raw_tensor("w", DataType::float32, {1}, test::float_bytes({1}))),
           MK::TensorProto, options);
  EXPECT_FALSE(j.contains("rawData"));
  EXPECT_EQ(j["name"], "w");
}

TEST(Dump, ErrorsNameThePathAndOffset) {
  // graph.node[1] claims 5 bytes but holds 1.
  auto bytes = message([](wire::Writer& m) {
    sub(m, schema::ModelProto::kGraph, [](wire::Writer& g) {
      sub(g, schema::GraphProto::kNode,
          [](wire::Writer& n) { n.field_string(schema::NodeProto::kOpType, "A"); });
      g.field_bytes(schema::GraphProto::kNode, test::bytes_of_text("\x22\x05x"));
    });
  });
  try {
    (void)dump_json(bytes, MK::ModelProto);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::out_of_bounds);
    EXPECT_EQ(e.field_path(), "graph.node[1]");
    EXPECT_NE(e.offset(), Error::kNoOffset);
  }
  DumpOptions shallow;
  shallow.max_depth = 1;
  EXPECT_THROW((void)dump_json(bytes, MK::ModelProto, shallow), Error);
}

}  // namespace
}  // namespace onnxmap
