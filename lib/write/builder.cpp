// The builder's own methods: collecting a model's parts, checking tensor sizes as they arrive.
// Encoding them is builder_plan.cpp's work.

#include "onnxmap/builder.hpp"

#include "onnxmap/error.hpp"

namespace onnxmap {

TensorBuilder::TensorBuilder(std::string name, DataType type, std::vector<std::int64_t> dims)
    : name_(std::move(name)), type_(type), dims_(std::move(dims)) {}

TensorBuilder::TensorBuilder(std::string name, DataType type, std::vector<std::int64_t> dims,
                             std::span<const std::byte> bytes)
    : TensorBuilder(std::move(name), type, std::move(dims)) {
  bytes_ = bytes;
  check_size(bytes.size());
}

TensorBuilder::TensorBuilder(std::string name, DataType type, std::vector<std::int64_t> dims,
                             std::vector<std::byte> bytes)
    : TensorBuilder(std::move(name), type, std::move(dims)) {
  owned_ = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
  bytes_ = *owned_;
  check_size(bytes_.size());
}

TensorBuilder::TensorBuilder(std::string name, DataType type, std::vector<std::int64_t> dims,
                             PayloadGenerator generate)
    : TensorBuilder(std::move(name), type, std::move(dims)) {
  generator_ = std::make_shared<const PayloadGenerator>(std::move(generate));
  check_size(std::nullopt);
}

TensorBuilder TensorBuilder::zeros(std::string name, DataType type,
                                   std::vector<std::int64_t> dims) {
  TensorBuilder t(std::move(name), type, std::move(dims));
  t.zeros_ = true;
  t.check_size(std::nullopt);
  return t;
}

TensorBuilder TensorBuilder::strings(std::string name, std::vector<std::int64_t> dims,
                                     std::vector<std::string> values) {
  TensorBuilder t(std::move(name), DataType::string, std::move(dims));
  const auto count = element_count(t.dims_);
  if (!count || *count != values.size()) {
    throw Error(ErrorKind::invalid_argument, "tensor \"" + t.name_ +
                                                 "\": " + std::to_string(values.size()) +
                                                 " strings do not fill its dims");
  }
  t.strings_ = std::move(values);
  return t;
}

void TensorBuilder::check_size(std::optional<std::uint64_t> held) {
  const std::string what = "tensor \"" + name_ + "\": ";
  if (type_ == DataType::string || !traits(type_)) {
    throw Error(ErrorKind::invalid_argument,
                what + "bytes need a numeric data type (STRING tensors: TensorBuilder::strings)");
  }
  for (const std::int64_t d : dims_) {
    if (d < 0) throw Error(ErrorKind::invalid_argument, what + "negative dimension");
  }
  const auto count = element_count(dims_);
  const auto need = count ? packed_byte_size(type_, *count) : std::nullopt;
  if (!need) {
    throw Error(ErrorKind::invalid_argument, what + "dims x dtype exceed 2^64 bytes");
  }
  if (held && *held != *need) {
    throw Error(ErrorKind::invalid_argument, what + std::to_string(*held) +
                                                 " bytes, but its dims of " + to_string(type_) +
                                                 " need " + std::to_string(*need));
  }
  byte_size_ = *need;
}

TensorBuilder& TensorBuilder::doc_string(std::string text) {
  doc_ = std::move(text);
  return *this;
}
TensorBuilder& TensorBuilder::metadata(std::string key, std::string value) {
  metadata_.emplace_back(std::move(key), std::move(value));
  return *this;
}

TypeSpec TypeSpec::tensor(DataType elem, std::optional<std::vector<Dim>> shape) {
  TypeSpec t;
  t.elem_ = elem;
  t.shape_ = std::move(shape);
  return t;
}
TypeSpec TypeSpec::sparse_tensor(DataType elem, std::optional<std::vector<Dim>> shape) {
  TypeSpec t = tensor(elem, std::move(shape));
  t.kind_ = Kind::sparse_tensor;
  return t;
}
TypeSpec TypeSpec::sequence(TypeSpec elem) {
  TypeSpec t;
  t.kind_ = Kind::sequence;
  t.inner_ = std::make_shared<const TypeSpec>(std::move(elem));
  return t;
}
TypeSpec TypeSpec::map(DataType key, TypeSpec value) {
  TypeSpec t = sequence(std::move(value));
  t.kind_ = Kind::map;
  t.elem_ = key;
  return t;
}
TypeSpec TypeSpec::optional(TypeSpec elem) {
  TypeSpec t = sequence(std::move(elem));
  t.kind_ = Kind::optional;
  return t;
}
TypeSpec TypeSpec::opaque(std::string domain, std::string name) {
  TypeSpec t;
  t.kind_ = Kind::opaque;
  t.domain_ = std::move(domain);
  t.name_ = std::move(name);
  return t;
}
TypeSpec& TypeSpec::denotation(std::string text) {
  denotation_ = std::move(text);
  return *this;
}

NodeBuilder::NodeBuilder(std::string op, std::vector<std::string> in, std::vector<std::string> out)
    : op_type(std::move(op)), inputs(std::move(in)), outputs(std::move(out)) {}

NodeBuilder& NodeBuilder::name(std::string text) {
  node_name = std::move(text);
  return *this;
}
NodeBuilder& NodeBuilder::domain(std::string text) {
  node_domain = std::move(text);
  return *this;
}
NodeBuilder& NodeBuilder::overload(std::string text) {
  node_overload = std::move(text);
  return *this;
}
NodeBuilder& NodeBuilder::doc_string(std::string text) {
  doc = std::move(text);
  return *this;
}
NodeBuilder& NodeBuilder::metadata(std::string key, std::string value) {
  metadata_props.emplace_back(std::move(key), std::move(value));
  return *this;
}
NodeBuilder& NodeBuilder::attribute(std::string attr_name, AttributeValue value) {
  attributes.push_back(AttributeBuilder{std::move(attr_name), std::move(value), {}, {}, {}});
  return *this;
}
NodeBuilder& NodeBuilder::attribute(std::string attr_name, const GraphBuilder& graph) {
  return attribute(std::move(attr_name), std::make_shared<GraphBuilder>(graph));
}
NodeBuilder& NodeBuilder::attribute_ref(std::string attr_name, std::string ref_attr_name,
                                        AttributeType type) {
  attributes.push_back(
      AttributeBuilder{std::move(attr_name), std::nullopt, std::move(ref_attr_name), type, {}});
  return *this;
}

NodeBuilder& GraphBuilder::node(std::string op_type, std::vector<std::string> in,
                                std::vector<std::string> out) {
  return nodes.emplace_back(std::move(op_type), std::move(in), std::move(out));
}
GraphBuilder& GraphBuilder::initializer(TensorBuilder tensor) {
  initializers.push_back(std::move(tensor));
  return *this;
}
GraphBuilder& GraphBuilder::sparse_initializer(SparseTensorBuilder tensor) {
  sparse_initializers.push_back(std::move(tensor));
  return *this;
}
GraphBuilder& GraphBuilder::input(std::string value_name, std::optional<TypeSpec> type) {
  inputs.push_back({std::move(value_name), std::move(type), {}});
  return *this;
}
GraphBuilder& GraphBuilder::output(std::string value_name, std::optional<TypeSpec> type) {
  outputs.push_back({std::move(value_name), std::move(type), {}});
  return *this;
}
GraphBuilder& GraphBuilder::value_info(std::string value_name, std::optional<TypeSpec> type) {
  value_infos.push_back({std::move(value_name), std::move(type), {}});
  return *this;
}
GraphBuilder& GraphBuilder::doc_string(std::string text) {
  doc = std::move(text);
  return *this;
}
GraphBuilder& GraphBuilder::metadata(std::string key, std::string value) {
  metadata_props.emplace_back(std::move(key), std::move(value));
  return *this;
}

NodeBuilder& FunctionBuilder::node(std::string op_type, std::vector<std::string> in,
                                   std::vector<std::string> out) {
  return nodes.emplace_back(std::move(op_type), std::move(in), std::move(out));
}

ModelBuilder& ModelBuilder::ir_version(std::int64_t v) {
  ir = v;
  return *this;
}
ModelBuilder& ModelBuilder::opset(std::string opset_domain, std::int64_t v) {
  opset_imports.emplace_back(std::move(opset_domain), v);
  return *this;
}
ModelBuilder& ModelBuilder::producer(std::string name, std::string producer_ver) {
  producer_name = std::move(name);
  producer_version = std::move(producer_ver);
  return *this;
}
ModelBuilder& ModelBuilder::domain(std::string text) {
  model_domain = std::move(text);
  return *this;
}
ModelBuilder& ModelBuilder::model_version(ModelVersion v) {
  version = v;
  return *this;
}
ModelBuilder& ModelBuilder::doc_string(std::string text) {
  doc = std::move(text);
  return *this;
}
ModelBuilder& ModelBuilder::metadata(std::string key, std::string value) {
  metadata_props.emplace_back(std::move(key), std::move(value));
  return *this;
}
GraphBuilder& ModelBuilder::graph(std::string name) {
  if (!main_graph) main_graph.emplace(std::move(name));
  return *main_graph;
}
FunctionBuilder& ModelBuilder::function(std::string function_domain, std::string name) {
  FunctionBuilder& f = functions.emplace_back();
  f.domain = std::move(function_domain);
  f.name = std::move(name);
  return f;
}

}  // namespace onnxmap
