#pragma once
// Making models in C++: a graph of nodes with attributes of every type, initializers whose bytes
// are borrowed (a span the caller keeps alive until save returns) or owned, value infos, opsets,
// functions and metadata. Saved with onnxmap::save (save.hpp), which places tensors inline or in
// external data files like any other model.
//
//   onnxmap::ModelBuilder model;
//   model.opset("", 21);
//   onnxmap::GraphBuilder& g = model.graph("main");
//   g.input("x", onnxmap::TypeSpec::tensor(onnxmap::DataType::float32, {{"batch", 4}}));
//   g.initializer(onnxmap::TensorBuilder("w", onnxmap::DataType::float32, {4, 4}, weights));
//   g.node("MatMul", {"x", "w"}, {"y"});
//   g.output("y", onnxmap::TypeSpec::tensor(onnxmap::DataType::float32, {{"batch", 4}}));
//   onnxmap::save(model, "model.onnx");
//
// Threads: builders are plain values without locks: one thread at a time may change one, and
// none may while onnxmap::save reads it (nor free the bytes it borrows). Different builders are
// independent.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "onnxmap/export.hpp"
#include "onnxmap/schema.hpp"

namespace onnxmap {

class GraphBuilder;
class TypeSpec;

// Makes a tensor's bytes while the model is written, for models larger than memory (converters
// from other formats, synthetic models): fills `out` with the bytes at `offset` of the payload
// (raw_data layout). Called in order, in pieces of at most 1 MiB.
using PayloadGenerator = std::function<void(std::uint64_t offset, std::span<std::byte> out)>;

// A tensor: name, type, dims and its elements in the raw_data layout (little-endian, sub-byte
// types packed as onnx.proto says), or strings for STRING tensors.
class ONNXMAP_API TensorBuilder {
 public:
  // Borrowed bytes: the caller keeps them alive until save returns. Throws onnxmap::Error
  // (invalid_argument) when their size is not dims x dtype.
  TensorBuilder(std::string name, DataType type, std::vector<std::int64_t> dims,
                std::span<const std::byte> bytes);
  // Owned bytes.
  TensorBuilder(std::string name, DataType type, std::vector<std::int64_t> dims,
                std::vector<std::byte> bytes);
  // Bytes made on demand by `generate` when the model is written.
  TensorBuilder(std::string name, DataType type, std::vector<std::int64_t> dims,
                PayloadGenerator generate);
  // All zeros, written as a file hole (a sparse file: no disk used, reads as zeros).
  static TensorBuilder zeros(std::string name, DataType type, std::vector<std::int64_t> dims);
  // A STRING tensor.
  static TensorBuilder strings(std::string name, std::vector<std::int64_t> dims,
                               std::vector<std::string> values);

  TensorBuilder& doc_string(std::string text);
  TensorBuilder& metadata(std::string key, std::string value);

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] DataType type() const noexcept { return type_; }
  [[nodiscard]] const std::vector<std::int64_t>& dims() const noexcept { return dims_; }
  // The bytes held or borrowed; empty for generated and zero tensors (see byte_size()).
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return bytes_; }
  [[nodiscard]] std::uint64_t byte_size() const noexcept { return byte_size_; }
  // Set for generated tensors.
  [[nodiscard]] const std::shared_ptr<const PayloadGenerator>& generator() const noexcept {
    return generator_;
  }
  [[nodiscard]] bool is_zeros() const noexcept { return zeros_; }
  [[nodiscard]] const std::vector<std::string>& string_values() const noexcept { return strings_; }
  [[nodiscard]] const std::string& doc() const noexcept { return doc_; }
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& metadata_props()
      const noexcept {
    return metadata_;
  }
  // The owner of owned bytes (null when borrowed).
  [[nodiscard]] const std::shared_ptr<const std::vector<std::byte>>& owner() const noexcept {
    return owned_;
  }

 private:
  TensorBuilder(std::string name, DataType type, std::vector<std::int64_t> dims);
  // Checks dims and type, sets byte_size_ and checks `held` bytes against it when given.
  void check_size(std::optional<std::uint64_t> held);

  std::string name_;
  DataType type_;
  std::vector<std::int64_t> dims_;
  std::span<const std::byte> bytes_;
  std::shared_ptr<const std::vector<std::byte>> owned_;
  std::shared_ptr<const PayloadGenerator> generator_;
  bool zeros_ = false;
  std::uint64_t byte_size_ = 0;
  std::vector<std::string> strings_;
  std::string doc_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

// SparseTensorProto: the non-zero values, their indices (INT64, [NNZ] or [NNZ, rank]) and the
// dense shape.
struct SparseTensorBuilder {
  TensorBuilder values;
  TensorBuilder indices;
  std::vector<std::int64_t> dims;
};

// One dimension of a shape: a number, a symbolic name, or unknown; with an optional denotation.
struct Dim {
  std::variant<std::monostate, std::int64_t, std::string> value;
  std::string denotation;

  Dim() = default;
  Dim(std::int64_t v) : value(v) {}                      // NOLINT: 4 reads as a dimension
  Dim(int v) : value(std::int64_t{v}) {}                 // NOLINT
  Dim(const char* param) : value(std::string(param)) {}  // NOLINT: "batch" likewise
  Dim(std::string param) : value(std::move(param)) {}    // NOLINT
};

// TypeProto: tensor, sparse tensor, sequence, map, optional or opaque.
class ONNXMAP_API TypeSpec {
 public:
  enum class Kind { tensor, sparse_tensor, sequence, map, optional, opaque };

  // No shape: the rank is unknown. An empty shape: a scalar.
  static TypeSpec tensor(DataType elem, std::optional<std::vector<Dim>> shape = std::nullopt);
  static TypeSpec sparse_tensor(DataType elem,
                                std::optional<std::vector<Dim>> shape = std::nullopt);
  static TypeSpec sequence(TypeSpec elem);
  static TypeSpec map(DataType key, TypeSpec value);
  static TypeSpec optional(TypeSpec elem);
  static TypeSpec opaque(std::string domain, std::string name);
  TypeSpec& denotation(std::string text);

  [[nodiscard]] Kind kind() const noexcept { return kind_; }
  [[nodiscard]] DataType elem_type() const noexcept { return elem_; }
  [[nodiscard]] const std::optional<std::vector<Dim>>& shape() const noexcept { return shape_; }
  [[nodiscard]] const TypeSpec* inner() const noexcept { return inner_.get(); }
  [[nodiscard]] const std::string& domain() const noexcept { return domain_; }
  [[nodiscard]] const std::string& opaque_name() const noexcept { return name_; }
  [[nodiscard]] const std::string& denotation_text() const noexcept { return denotation_; }

 private:
  Kind kind_ = Kind::tensor;
  DataType elem_ = DataType::undefined;  // tensor, sparse tensor; the key type of a map
  std::optional<std::vector<Dim>> shape_;
  std::shared_ptr<const TypeSpec> inner_;  // sequence, map value, optional
  std::string domain_, name_, denotation_;
};

// The value of an attribute; its AttributeType follows from the alternative held.
using AttributeValue =
    std::variant<float, std::int64_t, std::string, TensorBuilder, std::shared_ptr<GraphBuilder>,
                 std::vector<float>, std::vector<std::int64_t>, std::vector<std::string>,
                 std::vector<TensorBuilder>, std::vector<std::shared_ptr<GraphBuilder>>,
                 SparseTensorBuilder, std::vector<SparseTensorBuilder>, TypeSpec,
                 std::vector<TypeSpec>>;

struct AttributeBuilder {
  std::string name;
  std::optional<AttributeValue> value;  // empty for a reference to a function's attribute
  std::string ref_attr_name;            // in function bodies: the attribute this one refers to
  AttributeType ref_type = AttributeType::undefined;  // its type, with ref_attr_name
  std::string doc_string;
};

class ONNXMAP_API NodeBuilder {
 public:
  NodeBuilder(std::string op_type, std::vector<std::string> inputs,
              std::vector<std::string> outputs);

  NodeBuilder& name(std::string text);
  NodeBuilder& domain(std::string text);
  NodeBuilder& overload(std::string text);
  NodeBuilder& doc_string(std::string text);
  NodeBuilder& metadata(std::string key, std::string value);
  NodeBuilder& attribute(std::string name, AttributeValue value);
  // A graph attribute (If, Loop, Scan bodies); the graph is copied.
  NodeBuilder& attribute(std::string name, const GraphBuilder& graph);
  // In a function body: `name` takes the value of the function's attribute `ref_attr_name`.
  NodeBuilder& attribute_ref(std::string name, std::string ref_attr_name, AttributeType type);

  std::string op_type, node_name, node_domain, node_overload, doc;
  std::vector<std::string> inputs, outputs;
  std::vector<AttributeBuilder> attributes;
  std::vector<std::pair<std::string, std::string>> metadata_props;
};

struct ValueInfoBuilder {
  std::string name;
  std::optional<TypeSpec> type;
  std::string doc_string;
};

class ONNXMAP_API GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = {}) : name(std::move(name)) {}

  // The returned reference stays valid as more nodes are added.
  NodeBuilder& node(std::string op_type, std::vector<std::string> inputs,
                    std::vector<std::string> outputs);
  GraphBuilder& initializer(TensorBuilder tensor);
  GraphBuilder& sparse_initializer(SparseTensorBuilder tensor);
  GraphBuilder& input(std::string name, std::optional<TypeSpec> type = std::nullopt);
  GraphBuilder& output(std::string name, std::optional<TypeSpec> type = std::nullopt);
  GraphBuilder& value_info(std::string name, std::optional<TypeSpec> type = std::nullopt);
  GraphBuilder& doc_string(std::string text);
  GraphBuilder& metadata(std::string key, std::string value);

  std::string name, doc;
  std::deque<NodeBuilder> nodes;
  std::vector<TensorBuilder> initializers;
  std::vector<SparseTensorBuilder> sparse_initializers;
  std::vector<ValueInfoBuilder> inputs, outputs, value_infos;
  std::vector<std::pair<std::string, std::string>> metadata_props;
};

// A model-local function (FunctionProto).
struct ONNXMAP_API FunctionBuilder {
  std::string name, domain, overload, doc_string;
  std::vector<std::string> inputs, outputs, attributes;
  std::vector<AttributeBuilder> attribute_defaults;  // attribute_proto: attributes with defaults
  std::deque<NodeBuilder> nodes;
  std::vector<std::pair<std::string, std::int64_t>> opset_imports;
  std::vector<ValueInfoBuilder> value_infos;
  std::vector<std::pair<std::string, std::string>> metadata_props;

  NodeBuilder& node(std::string op_type, std::vector<std::string> inputs,
                    std::vector<std::string> outputs);
};

class ONNXMAP_API ModelBuilder {
 public:
  ModelBuilder& ir_version(std::int64_t version);
  ModelBuilder& opset(std::string domain, std::int64_t version);
  ModelBuilder& producer(std::string name, std::string version = {});
  ModelBuilder& domain(std::string text);
  ModelBuilder& model_version(ModelVersion version);
  ModelBuilder& doc_string(std::string text);
  ModelBuilder& metadata(std::string key, std::string value);
  // The main graph, made on first call.
  GraphBuilder& graph(std::string name = {});
  FunctionBuilder& function(std::string domain, std::string name);

  std::int64_t ir = kLatestIrVersion;
  std::vector<std::pair<std::string, std::int64_t>> opset_imports;
  std::string producer_name, producer_version, model_domain, doc;
  std::optional<ModelVersion> version;
  std::vector<std::pair<std::string, std::string>> metadata_props;
  std::optional<GraphBuilder> main_graph;
  std::deque<FunctionBuilder> functions;
};

}  // namespace onnxmap
