#include "walk.hpp"

#include <cstring>
#include <functional>

namespace onnxmap::fuzz {

namespace {

// Keeps results alive so the optimiser cannot drop the reads that produced them. Per thread:
// the concurrency test walks one model from many threads at once.
thread_local volatile std::size_t g_sink = 0;

void consume(std::string_view text) {
  g_sink = g_sink + text.size();
}
void consume(std::span<const std::byte> bytes) {
  // Reading the first and last byte is what catches a span pointing outside the map.
  if (!bytes.empty()) {
    g_sink =
        g_sink + static_cast<std::size_t>(bytes.front()) + static_cast<std::size_t>(bytes.back());
  }
}
void consume(const std::vector<StringStringEntry>& entries) {
  for (const auto& e : entries) {
    consume(e.key);
    consume(e.value);
  }
}

// Calls that may refuse the request for a reason the input is allowed to have (a typed tensor
// has no zero-copy view, a slice of a scalar, a typed field with the wrong element count).
void allowed_to_refuse(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error&) {
  }
}

void walk_graph(const Graph& graph);

void walk_type(const Type& type, int depth) {
  // Types nest (sequence of map of optional ...); the index bounds the nesting, and so does this.
  if (depth > 128) return;
  g_sink = g_sink + static_cast<std::size_t>(type.kind());
  consume(type.denotation());
  g_sink = g_sink + static_cast<std::size_t>(type.elem_type()) +
           static_cast<std::size_t>(type.map_key_type());
  if (const auto shape = type.shape()) {
    for (const Dimension& d : *shape) {
      g_sink = g_sink + static_cast<std::size_t>(d.value.value_or(0));
      consume(d.param);
      consume(d.denotation);
    }
  }
  consume(type.opaque_domain());
  consume(type.opaque_name());
  // to_string covers the nested types itself, so once at the top is enough.
  if (depth == 0) consume(type.to_string());
  if (type.kind() == Type::Kind::sequence || type.kind() == Type::Kind::map ||
      type.kind() == Type::Kind::optional) {
    walk_type(type.element(), depth + 1);
  }
}

void walk_value_info(const ValueInfo& info) {
  consume(info.name());
  consume(info.doc_string());
  consume(info.metadata_props());
  walk_type(info.type(), 0);
}

void walk_sparse(const SparseTensor& sparse) {
  if (const auto values = sparse.values()) walk_tensor(*values);
  if (const auto indices = sparse.indices()) walk_tensor(*indices);
  g_sink = g_sink + sparse.dims().size();
}

void walk_attribute(const Attribute& attribute) {
  consume(attribute.name());
  g_sink = g_sink + static_cast<std::size_t>(attribute.type());
  consume(attribute.ref_attr_name());
  consume(attribute.doc_string());
  float f = attribute.f();
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  g_sink = g_sink + bits + static_cast<std::size_t>(attribute.i());
  consume(attribute.s());
  if (const auto t = attribute.t()) walk_tensor(*t);
  if (const auto g = attribute.g()) walk_graph(*g);
  if (const auto s = attribute.sparse_tensor()) walk_sparse(*s);
  if (const auto tp = attribute.tp()) walk_type(*tp, 0);
  g_sink = g_sink + attribute.floats().size() + attribute.ints().size();
  for (const auto s : attribute.strings()) consume(s);
  for (const Tensor& t : attribute.tensors()) walk_tensor(t);
  for (const Graph g : attribute.graphs()) walk_graph(g);
  for (const SparseTensor s : attribute.sparse_tensors()) walk_sparse(s);
  for (const Type& tp : attribute.type_protos()) walk_type(tp, 0);
}

void walk_node(const Node& node) {
  for (const auto s : node.inputs()) consume(s);
  for (const auto s : node.outputs()) consume(s);
  consume(node.name());
  consume(node.op_type());
  consume(node.domain());
  consume(node.overload());
  consume(node.doc_string());
  consume(node.metadata_props());
  for (const Attribute a : node.attributes()) {
    walk_attribute(a);
    // Lookup by name finds an attribute of that name (the first, or the one protobuf keeps).
    if (!node.attribute(a.name())) throw std::logic_error("attribute() misses a listed name");
  }
  for (const NodeDeviceConfiguration& config : device_configurations(node)) {
    consume(config.configuration_id);
    for (const ShardingSpec& spec : config.sharding_spec) {
      consume(spec.tensor_name);
      g_sink = g_sink + spec.device.size() + spec.index_to_device_group_map.size() +
               spec.sharded_dim.size();
      for (const ShardedDim& dim : spec.sharded_dim) {
        for (const SimpleShardedDim& s : dim.simple_sharding) consume(s.dim_param);
      }
    }
  }
}

void walk_graph(const Graph& graph) {
  consume(graph.name());
  consume(graph.doc_string());
  consume(graph.metadata_props());
  for (const Node n : graph.nodes()) walk_node(n);
  for (const Tensor& t : graph.initializers()) walk_tensor(t);
  for (const SparseTensor s : graph.sparse_initializers()) walk_sparse(s);
  for (const ValueInfo v : graph.inputs()) walk_value_info(v);
  for (const ValueInfo v : graph.outputs()) walk_value_info(v);
  for (const ValueInfo v : graph.value_infos()) walk_value_info(v);
  for (const TensorAnnotation& a : quantization_annotations(graph)) {
    consume(a.tensor_name);
    consume(a.quant_parameter_tensor_names);
  }
}

void walk_function(const Function& function) {
  consume(function.name());
  consume(function.domain());
  consume(function.overload());
  consume(function.doc_string());
  for (const auto s : function.inputs()) consume(s);
  for (const auto s : function.outputs()) consume(s);
  for (const auto s : function.attribute_names()) consume(s);
  for (const Attribute a : function.attribute_defaults()) walk_attribute(a);
  for (const Node n : function.nodes()) walk_node(n);
  for (const OperatorSetId& id : function.opset_imports()) consume(id.domain);
  for (const ValueInfo v : function.value_infos()) walk_value_info(v);
  consume(function.metadata_props());
}

}  // namespace

void walk_tensor(const Tensor& tensor) {
  consume(tensor.name());
  consume(tensor.lookup_name());
  consume(tensor.path());
  g_sink = g_sink + static_cast<std::size_t>(tensor.data_type()) + tensor.dims().size() +
           tensor.element_count() + tensor.byte_size() + static_cast<std::size_t>(tensor.storage());
  consume(tensor.doc_string());
  consume(tensor.external_data());
  consume(tensor.metadata_props());
  consume(tensor.data_file());
  g_sink = g_sink + tensor.file_offset() + tensor.alignment();
  if (const auto seg = segment(tensor)) g_sink = g_sink + static_cast<std::size_t>(seg->end);
  prefetch(tensor);
  allowed_to_refuse([&] { consume(tensor.bytes()); });
  allowed_to_refuse([&] {
    const TensorData data = tensor.data();
    consume(data.bytes());
    // Decoded or viewed, the bytes are the raw_data layout: byte_size() of them.
    const auto type = traits(tensor.data_type());
    if (tensor.storage() != TensorStorage::none && type && type->bits > 0 &&
        data.bytes().size() != tensor.byte_size()) {
      throw std::logic_error("data() size differs from byte_size()");
    }
    // The statistics of whatever values a file holds, and a tensor equals itself.
    if (has_stats(tensor.data_type())) {
      const TensorStats stats =
          tensor_stats(data.bytes(), tensor.data_type(), tensor.element_count(), 8);
      if (stats.zeros + stats.nans + stats.infinities > stats.count) {
        throw std::logic_error("tensor_stats counts more values than there are");
      }
      const ValuesDiff same =
          compare_values(data.bytes(), data.bytes(), tensor.data_type(), tensor.element_count());
      if (same.differing != 0)
        throw std::logic_error("compare_values: a tensor differs from itself");
    }
  });
  allowed_to_refuse([&] {
    for (const auto s : tensor.strings()) consume(s);
  });
  const auto dims = tensor.dims();
  const std::uint64_t rows = dims.empty() ? 0 : static_cast<std::uint64_t>(dims[0]);
  for (const auto& range : {std::pair<std::uint64_t, std::uint64_t>{0, rows},
                            {rows / 2, rows},
                            {0, 1},
                            {rows, rows + 1}}) {
    allowed_to_refuse([&] { consume(tensor.slice_rows(range.first, range.second)); });
  }
  tensor.release();
}

void walk_model(const Model& model) {
  g_sink = g_sink + static_cast<std::size_t>(model.ir_version()) +
           static_cast<std::size_t>(model.model_version().raw);
  consume(model.model_version().to_string());
  for (const OperatorSetId& id : model.opset_imports()) consume(id.domain);
  consume(model.producer_name());
  consume(model.producer_version());
  consume(model.domain());
  consume(model.doc_string());
  consume(model.metadata_props());
  if (const auto graph = model.graph()) walk_graph(*graph);
  for (const Function f : model.functions()) walk_function(f);
  for (const TrainingInfo info : model.training_info()) {
    if (const auto g = info.initialization()) walk_graph(*g);
    if (const auto g = info.algorithm()) walk_graph(*g);
    consume(info.initialization_binding());
    consume(info.update_binding());
  }
  for (const DeviceConfiguration& config : device_configurations(model)) {
    consume(config.name);
    for (const auto d : config.devices) consume(d);
  }
  g_sink = g_sink + model.message_count() + model.file_size() + model.index_bytes();
  // The tensor table: each tensor directly, and found again by its name and by its path.
  for (std::size_t i = 0; i < model.tensor_count(); ++i) {
    const Tensor t = model.tensor_at(i);
    walk_tensor(t);
    const auto by_name = model.find_tensor(t.lookup_name());
    if (!by_name || by_name->lookup_name() != t.lookup_name()) {
      throw std::logic_error("find_tensor misses a listed name");
    }
    g_sink = g_sink + model.tensors(t.lookup_name()).size();
    // A path scan is linear; a few lookups are enough to exercise it.
    if (i < 4) {
      const auto by_path = model.tensor_at_path(t.path());
      if (!by_path || !(*by_path == t)) {
        throw std::logic_error("tensor_at_path misses a listed path");
      }
    }
  }
  allowed_to_refuse([&] { (void)model.tensor("\xff no such tensor"); });
}

void walk_summary(const ModelSummary& summary) {
  g_sink = g_sink + static_cast<std::size_t>(summary.ir_version());
  for (const OperatorSetId& id : summary.opset_imports()) consume(id.domain);
  consume(summary.producer_name());
  consume(summary.producer_version());
  consume(summary.domain());
  consume(summary.model_version().to_string());
  consume(summary.doc_string());
  consume(summary.metadata_props());
  g_sink = g_sink + static_cast<std::size_t>(summary.has_graph()) + summary.file_size();
  consume(summary.graph_name());
  for (const ValueInfo v : summary.inputs()) walk_value_info(v);
  for (const ValueInfo v : summary.outputs()) walk_value_info(v);
}

}  // namespace onnxmap::fuzz
