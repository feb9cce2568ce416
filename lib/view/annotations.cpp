// Decoding of the small annotation messages, whole, from their parent's bytes.

#include "onnxmap/annotations.hpp"

#include "onnxmap/model.hpp"
#include "view/leaf.hpp"

namespace onnxmap {

namespace {

using detail::Fields;
using detail::ModelIndex;
using detail::SpanList;
using detail::ViewAccess;

std::int64_t int64_of(const Fields& m, std::uint32_t number) {
  return wire::as_int64(m.varint_field(number).value_or(0));
}

SimpleShardedDim decode_simple(const ModelIndex* index, SpanList spans) {
  using SD = schema::SimpleShardedDimProto;
  const Fields m(index, std::move(spans));
  SimpleShardedDim dim;
  // dim_value and dim_param are a oneof: whichever came last on the wire stands.
  if (const auto value = m.varint_field(SD::kDimValue)) dim.dim_value = wire::as_int64(*value);
  dim.dim_param = m.string_field(SD::kDimParam);
  if (dim.dim_value && !dim.dim_param.empty()) {
    if (m.last_of(SD::kDimValue, SD::kDimParam) == SD::kDimParam) {
      dim.dim_value.reset();
    } else {
      dim.dim_param = {};
    }
  }
  dim.num_shards = int64_of(m, SD::kNumShards);
  return dim;
}

ShardingSpec decode_sharding(const ModelIndex* index, SpanList spans) {
  using SS = schema::ShardingSpecProto;
  const Fields m(index, std::move(spans));
  ShardingSpec spec;
  spec.tensor_name = m.string_field(SS::kTensorName);
  spec.device = m.int64s_field(SS::kDevice);
  for (auto& entry_spans : m.messages_field(SS::kIndexToDeviceGroupMap)) {
    const Fields entry(index, std::move(entry_spans));
    spec.index_to_device_group_map.push_back(
        {int64_of(entry, schema::IntIntListEntryProto::kKey),
         entry.int64s_field(schema::IntIntListEntryProto::kValue)});
  }
  for (auto& dim_spans : m.messages_field(SS::kShardedDim)) {
    const Fields dim(index, std::move(dim_spans));
    ShardedDim sharded{int64_of(dim, schema::ShardedDimProto::kAxis), {}};
    for (auto& simple : dim.messages_field(schema::ShardedDimProto::kSimpleSharding)) {
      sharded.simple_sharding.push_back(decode_simple(index, std::move(simple)));
    }
    spec.sharded_dim.push_back(std::move(sharded));
  }
  return spec;
}

}  // namespace

std::vector<DeviceConfiguration> device_configurations(const Model& model) {
  using DC = schema::DeviceConfigurationProto;
  const Fields root(ViewAccess::index(model), 0);
  std::vector<DeviceConfiguration> out;
  for (auto& spans : root.messages_field(schema::ModelProto::kConfiguration)) {
    const Fields m(ViewAccess::index(model), std::move(spans));
    out.push_back({m.string_field(DC::kName),
                   wire::as_int32(m.varint_field(DC::kNumDevices).value_or(0)),
                   m.strings_field(DC::kDevice)});
  }
  return out;
}

std::vector<NodeDeviceConfiguration> device_configurations(const Node& node) {
  using ND = schema::NodeDeviceConfigurationProto;
  const Fields n(ViewAccess::index(node), ViewAccess::record(node));
  std::vector<NodeDeviceConfiguration> out;
  for (auto& spans : n.messages_field(schema::NodeProto::kDeviceConfigurations)) {
    const Fields m(ViewAccess::index(node), std::move(spans));
    NodeDeviceConfiguration config;
    config.configuration_id = m.string_field(ND::kConfigurationId);
    for (auto& spec : m.messages_field(ND::kShardingSpec)) {
      config.sharding_spec.push_back(decode_sharding(ViewAccess::index(node), std::move(spec)));
    }
    config.pipeline_stage = wire::as_int32(m.varint_field(ND::kPipelineStage).value_or(0));
    out.push_back(std::move(config));
  }
  return out;
}

std::vector<TensorAnnotation> quantization_annotations(const Graph& graph) {
  const Fields g(ViewAccess::index(graph), ViewAccess::record(graph));
  std::vector<TensorAnnotation> out;
  for (auto& spans : g.messages_field(schema::GraphProto::kQuantizationAnnotation)) {
    const Fields m(ViewAccess::index(graph), std::move(spans));
    out.push_back({m.string_field(schema::TensorAnnotation::kTensorName),
                   detail::decode_entries(
                       ViewAccess::index(graph),
                       m.messages_field(schema::TensorAnnotation::kQuantParameterTensorNames))});
  }
  return out;
}

std::optional<TensorSegment> segment(const Tensor& tensor) {
  const Fields t(ViewAccess::index(tensor), ViewAccess::record(tensor));
  auto spans = t.message_field(schema::TensorProto::kSegment);
  if (spans.empty()) return std::nullopt;
  const Fields m(ViewAccess::index(tensor), std::move(spans));
  return TensorSegment{int64_of(m, schema::TensorProtoSegment::kBegin),
                       int64_of(m, schema::TensorProtoSegment::kEnd)};
}

}  // namespace onnxmap
