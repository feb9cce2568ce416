#pragma once
// Views over the messages of an opened model: handles (the model's index and a record number)
// that decode a field when a getter is called. Strings are std::string_view into the model's
// bytes. A view is valid while its Model (or ModelSummary) lives and does not keep it alive.
//
// Threads: any number of threads may use views of one model at once (the model is immutable
// after open); a view is a plain value, copied freely between threads.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "onnxmap/export.hpp"
#include "onnxmap/schema.hpp"

namespace onnxmap {

namespace detail {
// The index of an opened model, defined inside the library: a view is a pointer to it and a
// record number, and decodes its fields from the model's bytes when a getter is called.
struct ModelIndex;
// The library's way in to views and models (constructing them, reading their index).
struct ViewAccess;
// The byte ranges of a TypeProto given more than once (protobuf merges them): rare.
struct MergedSpans;
}  // namespace detail

// The indexed children of one field (a graph's nodes, a node's attributes, ...) as a
// random-access range of views, without allocation.
template <class View>
class ViewRange {
 public:
  [[nodiscard]] std::size_t size() const noexcept { return last_ - first_; }
  [[nodiscard]] bool empty() const noexcept { return first_ == last_; }
  [[nodiscard]] View operator[](std::size_t i) const {
    return View(index_, first_ + static_cast<std::uint32_t>(i));
  }

  class iterator {
   public:
    using value_type = View;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    View operator*() const { return View(index_, id_); }
    iterator& operator++() {
      ++id_;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++id_;
      return old;
    }
    bool operator==(const iterator& other) const { return id_ == other.id_; }

   private:
    friend class ViewRange;
    iterator(const detail::ModelIndex* index, std::uint32_t id) : index_(index), id_(id) {}
    const detail::ModelIndex* index_ = nullptr;
    std::uint32_t id_ = 0;
  };
  [[nodiscard]] iterator begin() const { return {index_, first_}; }
  [[nodiscard]] iterator end() const { return {index_, last_}; }

 private:
  friend struct detail::ViewAccess;
  ViewRange(const detail::ModelIndex* index, std::uint32_t first, std::uint32_t last)
      : index_(index), first_(first), last_(last) {}

  const detail::ModelIndex* index_;
  std::uint32_t first_;
  std::uint32_t last_;
};

// The values of a repeated string field (a node's inputs or outputs, a function's inputs, ...)
// as a forward range of string_view into the model's bytes, decoded while iterating: getting and
// walking it allocates nothing. size() walks the field; to_vector() (or converting
// to std::vector) copies the views out. Valid while the model lives.
class ONNXMAP_API Names {
 public:
  class iterator {
   public:
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using iterator_category = std::forward_iterator_tag;
    iterator() = default;
    std::string_view operator*() const noexcept { return value_; }
    iterator& operator++() {
      owner_->find_next(*this);
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      owner_->find_next(*this);
      return old;
    }
    bool operator==(const iterator& other) const noexcept {
      return pos_ == other.pos_ && span_ == other.span_;
    }

   private:
    friend class Names;
    const Names* owner_ = nullptr;
    std::size_t span_ = 0;            // the span of the message being read
    const std::byte* pos_ = nullptr;  // where the search for the next value starts; null at end
    std::string_view value_;
  };

  [[nodiscard]] iterator begin() const;
  [[nodiscard]] iterator end() const noexcept;
  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] bool empty() const { return begin() == end(); }
  [[nodiscard]] std::vector<std::string_view> to_vector() const;
  operator std::vector<std::string_view>() const { return to_vector(); }  // NOLINT: implicit
  friend bool operator==(const Names& names, const std::vector<std::string_view>& values) {
    return names.to_vector() == values;
  }

 private:
  friend struct detail::ViewAccess;
  Names(const detail::ModelIndex* index, std::uint32_t record, std::uint32_t number)
      : index_(index), record_(record), number_(number) {}
  // Moves `it` to the next value of the field after its position, or to end().
  void find_next(iterator& it) const;

  const detail::ModelIndex* index_ = nullptr;
  std::uint32_t record_ = 0;  // the message holding the field
  std::uint32_t number_ = 0;  // the field
};

class Tensor;
class Graph;
class Node;

struct OperatorSetId {
  std::string_view domain;  // "" is the default domain, ai.onnx
  std::int64_t version = 0;
};

// The default operator set's name. onnx.proto lets a node, a function or an opset import name
// it "" or "ai.onnx": both are the same set.
inline constexpr std::string_view kDefaultDomain = "ai.onnx";
// Whether `domain` names the default operator set: "" or "ai.onnx".
[[nodiscard]] constexpr bool is_default_domain(std::string_view domain) noexcept {
  return domain.empty() || domain == kDefaultDomain;
}
// `domain` as people read it: "ai.onnx" for either spelling of the default set, else itself.
[[nodiscard]] constexpr std::string_view domain_name(std::string_view domain) noexcept {
  return is_default_domain(domain) ? kDefaultDomain : domain;
}

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

// TypeProto and its kinds. Types are not indexed (they are leaf messages): a Type is the index
// and its bytes' place in the model file.
class ONNXMAP_API Type {
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

  // "FLOAT[batch, 128]", "seq(FLOAT)", "map(INT64, FLOAT[])": for people; a shape is spelled as
  // the command line spells tensor dims.
  [[nodiscard]] std::string to_string() const;

 private:
  friend struct detail::ViewAccess;

  const detail::ModelIndex* index_ = nullptr;  // null: no type (a default Type, a field absent)
  std::uint64_t offset_ = 0;                   // the message's bytes in the model file
  std::uint64_t length_ = 0;
  std::shared_ptr<const detail::MergedSpans> merged_;  // all of its bytes, when given twice
};

class ONNXMAP_API ValueInfo {
 public:
  [[nodiscard]] std::string_view name() const;
  [[nodiscard]] Type type() const;
  [[nodiscard]] std::string_view doc_string() const;
  [[nodiscard]] std::vector<StringStringEntry> metadata_props() const;

 private:
  friend struct detail::ViewAccess;
  friend class ViewRange<ValueInfo>;
  ValueInfo(const detail::ModelIndex* index, std::uint32_t record)
      : index_(index), record_(record) {}

  const detail::ModelIndex* index_;
  std::uint32_t record_;  // the message's record in the index
};

class SparseTensor;

class ONNXMAP_API Attribute {
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
  Attribute(const detail::ModelIndex* index, std::uint32_t record)
      : index_(index), record_(record) {}

  const detail::ModelIndex* index_;
  std::uint32_t record_;  // the message's record in the index
};

class ONNXMAP_API Node {
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
  Node(const detail::ModelIndex* index, std::uint32_t record) : index_(index), record_(record) {}

  const detail::ModelIndex* index_;
  std::uint32_t record_;  // the message's record in the index
};

class ONNXMAP_API Graph {
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
  Graph(const detail::ModelIndex* index, std::uint32_t record) : index_(index), record_(record) {}

  const detail::ModelIndex* index_;
  std::uint32_t record_;  // the message's record in the index
};

class ONNXMAP_API SparseTensor {
 public:
  [[nodiscard]] std::optional<Tensor> values() const;
  [[nodiscard]] std::optional<Tensor> indices() const;
  [[nodiscard]] std::vector<std::int64_t> dims() const;  // the dense shape

 private:
  friend struct detail::ViewAccess;
  friend class ViewRange<SparseTensor>;
  SparseTensor(const detail::ModelIndex* index, std::uint32_t record)
      : index_(index), record_(record) {}

  const detail::ModelIndex* index_;
  std::uint32_t record_;  // the message's record in the index
};

class ONNXMAP_API Function {
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
  Function(const detail::ModelIndex* index, std::uint32_t record)
      : index_(index), record_(record) {}

  const detail::ModelIndex* index_;
  std::uint32_t record_;  // the message's record in the index
};

class ONNXMAP_API TrainingInfo {
 public:
  [[nodiscard]] std::optional<Graph> initialization() const;
  [[nodiscard]] std::optional<Graph> algorithm() const;
  [[nodiscard]] std::vector<StringStringEntry> initialization_binding() const;
  [[nodiscard]] std::vector<StringStringEntry> update_binding() const;

 private:
  friend struct detail::ViewAccess;
  friend class ViewRange<TrainingInfo>;
  TrainingInfo(const detail::ModelIndex* index, std::uint32_t record)
      : index_(index), record_(record) {}

  const detail::ModelIndex* index_;
  std::uint32_t record_;  // the message's record in the index
};

// The module of the network that `node` computes for, as its exporter recorded it: the module
// path of torch's dynamo exporter's `namespace` metadata (": LlamaForCausalLM/model.layers.0:
// LlamaDecoderLayer/model.layers.0.mlp.up_proj: Linear/linear_3: aten.linear" ->
// "model.layers.0.mlp.up_proj"; "" where that text is in another form) where the node has that
// metadata, else the path of its name where the name is one
// ("/model/layers.0/mlp/up_proj/MatMul" -> "model.layers.0.mlp.up_proj": its segments but the
// last, joined by '.'); "" where neither says (a flat name, no metadata).
[[nodiscard]] ONNXMAP_API std::string module_path(const Node& node);

// Who reads an initializer: the first node of the graph that reads it as an input (its position
// in the graph's nodes and that input's), and that node's module_path.
struct InitializerReader {
  std::uint32_t node = 0;
  std::uint32_t input = 0;
  std::string module;
};

// The first reader of each initializer of `graph` that one of its nodes reads. Exporters that
// fold a Linear's transpose into its weight give it a name of their own (`val_772`,
// `onnx::MatMul_646`): the reader's module says whose weight it is. Names view the model's bytes.
[[nodiscard]] ONNXMAP_API std::unordered_map<std::string_view, InitializerReader>
initializer_readers(const Graph& graph);

}  // namespace onnxmap
