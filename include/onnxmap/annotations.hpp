#pragma once
// Small messages decoded whole when asked for: the IR 11+ device configuration and sharding
// messages, quantization annotations, tensor segments. Strings view the model's bytes.
//
// Threads: as the views (views.hpp): any number of threads may decode these from one model
// at once; the results are plain values.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "onnxmap/export.hpp"
#include "onnxmap/views.hpp"

namespace onnxmap {

// ModelProto.configuration: a named set of devices.
struct DeviceConfiguration {
  std::string_view name;
  std::int32_t num_devices = 0;
  std::vector<std::string_view> devices;
};

// SimpleShardedDimProto: a dimension (value or symbolic) split into num_shards.
struct SimpleShardedDim {
  std::optional<std::int64_t> dim_value;
  std::string_view dim_param;
  std::int64_t num_shards = 0;
};

struct ShardedDim {
  std::int64_t axis = 0;
  std::vector<SimpleShardedDim> simple_sharding;
};

struct IntIntListEntry {
  std::int64_t key = 0;
  std::vector<std::int64_t> value;
};

struct ShardingSpec {
  std::string_view tensor_name;
  std::vector<std::int64_t> device;
  std::vector<IntIntListEntry> index_to_device_group_map;
  std::vector<ShardedDim> sharded_dim;
};

// NodeProto.device_configurations.
struct NodeDeviceConfiguration {
  std::string_view configuration_id;
  std::vector<ShardingSpec> sharding_spec;
  std::int32_t pipeline_stage = 0;
};

// GraphProto.quantization_annotation.
struct TensorAnnotation {
  std::string_view tensor_name;
  std::vector<StringStringEntry> quant_parameter_tensor_names;
};

// TensorProto.segment: this tensor is elements [begin, end) of a larger one.
struct TensorSegment {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};

class Model;
class Tensor;

[[nodiscard]] ONNXMAP_API std::vector<DeviceConfiguration> device_configurations(
    const Model& model);
[[nodiscard]] ONNXMAP_API std::vector<NodeDeviceConfiguration> device_configurations(
    const Node& node);
[[nodiscard]] ONNXMAP_API std::vector<TensorAnnotation> quantization_annotations(
    const Graph& graph);
[[nodiscard]] ONNXMAP_API std::optional<TensorSegment> segment(const Tensor& tensor);

}  // namespace onnxmap
