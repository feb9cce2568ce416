#pragma once
// Views over the messages of an opened model: small values that decode a field when a getter is
// called. Strings are std::string_view into the model's bytes. A view is valid while its Model
// (or Summary) lives; any number of threads may use views of one model at once.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "onnxmap/detail/message_view.hpp"
#include "onnxmap/export.hpp"
#include "onnxmap/schema.hpp"

namespace onnxmap {

class Tensor;
class Graph;
class Node;

struct OperatorSetId {
  std::string_view domain;  // "" is the default domain, ai.onnx
  std::int64_t version = 0;
};

struct StringStringEntry {
  std::string_view key;
  std::string_view value;
};

// TensorShapeProto.Dimension: a value, a symbolic name, or neither (unknown).
struct Dimension {
  std::optional<std::int64_t> value;
  std::string_view param;
  std::string_view denotation;
};

// TypeProto and its kinds.
class ONNXMAP_API Type : private detail::MessageView {
 public:
  enum class Kind { none, tensor, sequence, map, optional, sparse_tensor, opaque };

  Type() = default;

  [[nodiscard]] Kind kind() const;
  [[nodiscard]] std::string_view denotation() const;
  // tensor and sparse_tensor: the element type and the shape (nullopt: no shape, unknown rank).
  [[nodiscard]] DataType elem_type() const;
  [[nodiscard]] std::optional<std::vector<Dimension>> shape() const;
  // sequence and optional: the element type; map: the value type.
  [[nodiscard]] Type element() const;
  [[nodiscard]] DataType map_key_type() const;
  // opaque
  [[nodiscard]] std::string_view opaque_domain() const;
  [[nodiscard]] std::string_view opaque_name() const;

  // "FLOAT[batch,128]", "seq(FLOAT)", "map(INT64,FLOAT[])": for people.
  [[nodiscard]] std::string to_string() const;

 private:
  friend struct detail::ViewAccess;
  Type(const detail::ModelIndex* index, detail::SpanList spans)
      : MessageView(index, std::move(spans)) {}
};

class ONNXMAP_API ValueInfo : private detail::MessageView {
 public:
  [[nodiscard]] std::string_view name() const;
  [[nodiscard]] Type type() const;
  [[nodiscard]] std::string_view doc_string() const;
  [[nodiscard]] std::vector<StringStringEntry> metadata_props() const;

 private:
  friend struct detail::ViewAccess;
  friend class ViewRange<ValueInfo>;
  ValueInfo(const detail::ModelIndex* index, std::uint32_t record) : MessageView(index, record) {}
};

class SparseTensor;

class ONNXMAP_API Attribute : private detail::MessageView {
 public:
  [[nodiscard]] std::string_view name() const;
  [[nodiscard]] AttributeType type() const;  // UNDEFINED when absent or not a known value
  [[nodiscard]] std::string_view ref_attr_name() const;
  [[nodiscard]] std::string_view doc_string() const;
  [[nodiscard]] float f() const;
  [[nodiscard]] std::int64_t i() const;
  [[nodiscard]] std::string_view s() const;  // bytes, not necessarily text
  [[nodiscard]] std::optional<Tensor> t() const;
  [[nodiscard]] std::optional<Graph> g() const;
  [[nodiscard]] std::optional<SparseTensor> sparse_tensor() const;
  [[nodiscard]] std::optional<Type> tp() const;
  [[nodiscard]] std::vector<float> floats() const;
  [[nodiscard]] std::vector<std::int64_t> ints() const;
  [[nodiscard]] std::vector<std::string_view> strings() const;
  [[nodiscard]] std::vector<Tensor> tensors() const;
  [[nodiscard]] ViewRange<Graph> graphs() const;
  [[nodiscard]] ViewRange<SparseTensor> sparse_tensors() const;
  [[nodiscard]] std::vector<Type> type_protos() const;

 private:
  friend struct detail::ViewAccess;
  friend class ViewRange<Attribute>;
  Attribute(const detail::ModelIndex* index, std::uint32_t record) : MessageView(index, record) {}
};

class ONNXMAP_API Node : private detail::MessageView {
 public:
  [[nodiscard]] Names inputs() const;
  [[nodiscard]] Names outputs() const;
  [[nodiscard]] std::string_view name() const;
  [[nodiscard]] std::string_view op_type() const;
  [[nodiscard]] std::string_view domain() const;
  [[nodiscard]] std::string_view overload() const;
  [[nodiscard]] std::string_view doc_string() const;
  [[nodiscard]] ViewRange<Attribute> attributes() const;
  [[nodiscard]] std::optional<Attribute> attribute(std::string_view name) const;
  [[nodiscard]] std::vector<StringStringEntry> metadata_props() const;

 private:
  friend struct detail::ViewAccess;
  friend class ViewRange<Node>;
  Node(const detail::ModelIndex* index, std::uint32_t record) : MessageView(index, record) {}
};

class ONNXMAP_API Graph : private detail::MessageView {
 public:
  [[nodiscard]] std::string_view name() const;
  [[nodiscard]] std::string_view doc_string() const;
  [[nodiscard]] ViewRange<Node> nodes() const;
  [[nodiscard]] std::vector<Tensor> initializers() const;
  [[nodiscard]] ViewRange<SparseTensor> sparse_initializers() const;
  [[nodiscard]] ViewRange<ValueInfo> inputs() const;
  [[nodiscard]] ViewRange<ValueInfo> outputs() const;
  [[nodiscard]] ViewRange<ValueInfo> value_infos() const;
  [[nodiscard]] std::vector<StringStringEntry> metadata_props() const;

 private:
  friend struct detail::ViewAccess;
  friend class ViewRange<Graph>;
  Graph(const detail::ModelIndex* index, std::uint32_t record) : MessageView(index, record) {}
};

class ONNXMAP_API SparseTensor : private detail::MessageView {
 public:
  [[nodiscard]] std::optional<Tensor> values() const;
  [[nodiscard]] std::optional<Tensor> indices() const;
  [[nodiscard]] std::vector<std::int64_t> dims() const;  // the dense shape

 private:
  friend struct detail::ViewAccess;
  friend class ViewRange<SparseTensor>;
  SparseTensor(const detail::ModelIndex* index, std::uint32_t record)
      : MessageView(index, record) {}
};

class ONNXMAP_API Function : private detail::MessageView {
 public:
  [[nodiscard]] std::string_view name() const;
  [[nodiscard]] std::string_view domain() const;
  [[nodiscard]] std::string_view overload() const;
  [[nodiscard]] std::string_view doc_string() const;
  [[nodiscard]] Names inputs() const;
  [[nodiscard]] Names outputs() const;
  [[nodiscard]] Names attribute_names() const;
  [[nodiscard]] ViewRange<Attribute> attribute_defaults() const;
  [[nodiscard]] ViewRange<Node> nodes() const;
  [[nodiscard]] std::vector<OperatorSetId> opset_imports() const;
  [[nodiscard]] ViewRange<ValueInfo> value_infos() const;
  [[nodiscard]] std::vector<StringStringEntry> metadata_props() const;

 private:
  friend struct detail::ViewAccess;
  friend class ViewRange<Function>;
  Function(const detail::ModelIndex* index, std::uint32_t record) : MessageView(index, record) {}
};

class ONNXMAP_API TrainingInfo : private detail::MessageView {
 public:
  [[nodiscard]] std::optional<Graph> initialization() const;
  [[nodiscard]] std::optional<Graph> algorithm() const;
  [[nodiscard]] std::vector<StringStringEntry> initialization_binding() const;
  [[nodiscard]] std::vector<StringStringEntry> update_binding() const;

 private:
  friend struct detail::ViewAccess;
  friend class ViewRange<TrainingInfo>;
  TrainingInfo(const detail::ModelIndex* index, std::uint32_t record)
      : MessageView(index, record) {}
};

}  // namespace onnxmap
