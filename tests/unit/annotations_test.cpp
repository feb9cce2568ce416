// IR 11+ device configuration and sharding, quantization annotations and segments, written by
// hand because python3-onnx (IR 8) cannot write them.

#include <gtest/gtest.h>

#include "model_builder.hpp"
#include "onnxmap/annotations.hpp"
#include "onnxmap/model.hpp"
#include "schema/fields.hpp"

namespace onnxmap {
namespace {

using test::message;
using test::sub;

std::vector<std::byte> distributed_model() {
  return message([](wire::Writer& m) {
    m.field_int64(schema::ModelProto::kIrVersion, 11);
    sub(m, schema::ModelProto::kConfiguration, [](wire::Writer& c) {
      using DC = schema::DeviceConfigurationProto;
      c.field_string(DC::kName, "tp2");
      c.field_int32(DC::kNumDevices, 2);
      c.field_string(DC::kDevice, "cuda:0");
      c.field_string(DC::kDevice, "cuda:1");
    });
    sub(m, schema::ModelProto::kGraph, [](wire::Writer& g) {
      sub(g, schema::GraphProto::kNode, [](wire::Writer& n) {
        n.field_string(schema::NodeProto::kOpType, "MatMul");
        sub(n, schema::NodeProto::kDeviceConfigurations, [](wire::Writer& d) {
          using ND = schema::NodeDeviceConfigurationProto;
          d.field_string(ND::kConfigurationId, "tp2");
          d.field_int32(ND::kPipelineStage, 1);
          sub(d, ND::kShardingSpec, [](wire::Writer& s) {
            using SS = schema::ShardingSpecProto;
            s.field_string(SS::kTensorName, "w");
            s.field_int64(SS::kDevice, 0);
            s.field_int64(SS::kDevice, 1);
            sub(s, SS::kIndexToDeviceGroupMap, [](wire::Writer& e) {
              e.field_int64(schema::IntIntListEntryProto::kKey, 0);
              const std::uint64_t group[] = {0, 1};
              e.field_packed_varints(schema::IntIntListEntryProto::kValue, group);
            });
            sub(s, SS::kShardedDim, [](wire::Writer& sd) {
              sd.field_int64(schema::ShardedDimProto::kAxis, 1);
              sub(sd, schema::ShardedDimProto::kSimpleSharding, [](wire::Writer& ss) {
                using SD = schema::SimpleShardedDimProto;
                ss.field_string(SD::kDimParam, "hidden");
                ss.field_int64(SD::kDimValue, 4096);  // the oneof member set last wins
                ss.field_int64(SD::kNumShards, 2);
              });
            });
          });
        });
      });
      sub(g, schema::GraphProto::kInitializer, [](wire::Writer& t) {
        t.field_int64(schema::TensorProto::kDims, 2);
        t.field_int32(schema::TensorProto::kDataType, 1);
        t.field_string(schema::TensorProto::kName, "w");
        sub(t, schema::TensorProto::kSegment, [](wire::Writer& s) {
          s.field_int64(schema::TensorProtoSegment::kBegin, 10);
          s.field_int64(schema::TensorProtoSegment::kEnd, 12);
        });
        t.field_bytes(schema::TensorProto::kRawData, test::float_bytes({1, 2}));
      });
      sub(g, schema::GraphProto::kQuantizationAnnotation, [](wire::Writer& a) {
        a.field_string(schema::TensorAnnotation::kTensorName, "w");
        sub(a, schema::TensorAnnotation::kQuantParameterTensorNames, [](wire::Writer& e) {
          e.field_string(schema::StringStringEntryProto::kKey, "SCALE_TENSOR");
          e.field_string(schema::StringStringEntryProto::kValue, "w_scale");
        });
      });
    });
  });
}

TEST(Annotations, DeviceConfigurationAndSharding) {
  const Model model = Model::from_bytes(distributed_model());
  const auto configs = device_configurations(model);
  ASSERT_EQ(configs.size(), 1U);
  EXPECT_EQ(configs[0].name, "tp2");
  EXPECT_EQ(configs[0].num_devices, 2);
  EXPECT_EQ(configs[0].devices, (std::vector<std::string_view>{"cuda:0", "cuda:1"}));

  const auto node_configs = device_configurations(model.graph()->nodes()[0]);
  ASSERT_EQ(node_configs.size(), 1U);
  EXPECT_EQ(node_configs[0].configuration_id, "tp2");
  EXPECT_EQ(node_configs[0].pipeline_stage, 1);
  ASSERT_EQ(node_configs[0].sharding_spec.size(), 1U);
  const ShardingSpec& spec = node_configs[0].sharding_spec[0];
  EXPECT_EQ(spec.tensor_name, "w");
  EXPECT_EQ(spec.device, (std::vector<std::int64_t>{0, 1}));
  ASSERT_EQ(spec.index_to_device_group_map.size(), 1U);
  EXPECT_EQ(spec.index_to_device_group_map[0].value, (std::vector<std::int64_t>{0, 1}));
  ASSERT_EQ(spec.sharded_dim.size(), 1U);
  EXPECT_EQ(spec.sharded_dim[0].axis, 1);
  ASSERT_EQ(spec.sharded_dim[0].simple_sharding.size(), 1U);
  const SimpleShardedDim& dim = spec.sharded_dim[0].simple_sharding[0];
  EXPECT_EQ(dim.dim_value, 4096);
  EXPECT_TRUE(dim.dim_param.empty());
  EXPECT_EQ(dim.num_shards, 2);
}

TEST(Annotations, QuantizationAndSegment) {
  const Model model = Model::from_bytes(distributed_model());
  const auto annotations = quantization_annotations(*model.graph());
  ASSERT_EQ(annotations.size(), 1U);
  EXPECT_EQ(annotations[0].tensor_name, "w");
  ASSERT_EQ(annotations[0].quant_parameter_tensor_names.size(), 1U);
  EXPECT_EQ(annotations[0].quant_parameter_tensor_names[0].value, "w_scale");
  const auto seg = segment(model.tensor("w"));
  ASSERT_TRUE(seg.has_value());
  EXPECT_EQ(seg->begin, 10);
  EXPECT_EQ(seg->end, 12);
}

}  // namespace
}  // namespace onnxmap
