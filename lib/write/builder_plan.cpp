// Encodes a ModelBuilder into a write plan: every field in field-number order, as libprotobuf
// serializes; tensor bytes are pieces of the plan (the caller's memory is copied only when
// written), placed inline or external by the DataLayout.

#include "write/builder_plan.hpp"

#include "schema/fields.hpp"
#include "wire/wire.hpp"

namespace onnxmap::detail {

namespace {

namespace s = schema;
using Entries = std::vector<std::pair<std::string, std::string>>;

// A message of the plan being written: scalar fields go to a writer, flushed into the plan
// before each nested message that has a plan entry of its own.
class Encoder {
 public:
  Encoder(Plan& plan, std::uint32_t id) : plan_(plan), id_(id) {}
  ~Encoder() { flush(); }
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  wire::Writer& w() { return writer_; }
  std::uint32_t child(std::uint32_t field_number) {
    flush();
    return plan_.add_child(id_, field_number);
  }
  void flush() {
    plan_.add_bytes(id_, writer_.bytes());
    writer_.clear();
  }
  [[nodiscard]] std::uint32_t id() const { return id_; }

 private:
  Plan& plan_;
  std::uint32_t id_;
  wire::Writer writer_;
};

void put_string(wire::Writer& w, std::uint32_t field, const std::string& text) {
  if (!text.empty()) w.field_string(field, text);
}

void put_entries(wire::Writer& w, std::uint32_t field, const Entries& entries) {
  for (const auto& [key, value] : entries) {
    wire::Writer e;
    e.field_string(s::StringStringEntryProto::kKey, key);
    e.field_string(s::StringStringEntryProto::kValue, value);
    w.field_bytes(field, e.bytes());
  }
}

void put_opsets(wire::Writer& w, std::uint32_t field,
                const std::vector<std::pair<std::string, std::int64_t>>& opsets) {
  for (const auto& [domain, version] : opsets) {
    wire::Writer o;
    o.field_string(s::OperatorSetIdProto::kDomain, domain);
    o.field_int64(s::OperatorSetIdProto::kVersion, version);
    w.field_bytes(field, o.bytes());
  }
}

std::vector<std::byte> shape_bytes(const std::vector<Dim>& shape) {
  wire::Writer w;
  for (const Dim& dim : shape) {
    wire::Writer d;
    if (const auto* v = std::get_if<std::int64_t>(&dim.value)) {
      d.field_int64(s::TensorShapeProtoDimension::kDimValue, *v);
    } else if (const auto* p = std::get_if<std::string>(&dim.value)) {
      d.field_string(s::TensorShapeProtoDimension::kDimParam, *p);
    }
    put_string(d, s::TensorShapeProtoDimension::kDenotation, dim.denotation);
    w.field_bytes(s::TensorShapeProto::kDim, d.bytes());
  }
  return w.take();
}

std::vector<std::byte> type_bytes(const TypeSpec& type) {
  wire::Writer inner;
  std::uint32_t field = 0;
  switch (type.kind()) {
    case TypeSpec::Kind::tensor:
    case TypeSpec::Kind::sparse_tensor:
      // elem_type and shape have the same numbers in TypeProto.Tensor and .SparseTensor.
      inner.field_int32(s::TypeProtoTensor::kElemType, static_cast<std::int32_t>(type.elem_type()));
      if (type.shape()) inner.field_bytes(s::TypeProtoTensor::kShape, shape_bytes(*type.shape()));
      field = type.kind() == TypeSpec::Kind::tensor ? s::TypeProto::kTensorType
                                                    : s::TypeProto::kSparseTensorType;
      break;
    case TypeSpec::Kind::sequence:
      inner.field_bytes(s::TypeProtoSequence::kElemType, type_bytes(*type.inner()));
      field = s::TypeProto::kSequenceType;
      break;
    case TypeSpec::Kind::map:
      inner.field_int32(s::TypeProtoMap::kKeyType, static_cast<std::int32_t>(type.elem_type()));
      inner.field_bytes(s::TypeProtoMap::kValueType, type_bytes(*type.inner()));
      field = s::TypeProto::kMapType;
      break;
    case TypeSpec::Kind::optional:
      inner.field_bytes(s::TypeProtoOptional::kElemType, type_bytes(*type.inner()));
      field = s::TypeProto::kOptionalType;
      break;
    case TypeSpec::Kind::opaque:
      put_string(inner, s::TypeProtoOpaque::kDomain, type.domain());
      put_string(inner, s::TypeProtoOpaque::kName, type.opaque_name());
      field = s::TypeProto::kOpaqueType;
      break;
  }
  wire::Writer w;
  w.field_bytes(field, inner.bytes());
  put_string(w, s::TypeProto::kDenotation, type.denotation_text());
  return w.take();
}

void put_value_infos(wire::Writer& w, std::uint32_t field,
                     const std::vector<ValueInfoBuilder>& infos) {
  for (const ValueInfoBuilder& info : infos) {
    wire::Writer v;
    v.field_string(s::ValueInfoProto::kName, info.name);
    if (info.type) v.field_bytes(s::ValueInfoProto::kType, type_bytes(*info.type));
    put_string(v, s::ValueInfoProto::kDocString, info.doc_string);
    w.field_bytes(field, v.bytes());
  }
}

class BuilderPlanner {
 public:
  BuilderPlanner(DataLayout& layout, Plan& plan, SaveResult& result)
      : layout_(layout), plan_(plan), result_(result) {}

  void model(const ModelBuilder& m) {
    Encoder e(plan_, 0);
    e.w().field_int64(s::ModelProto::kIrVersion, m.ir);
    put_string(e.w(), s::ModelProto::kProducerName, m.producer_name);
    put_string(e.w(), s::ModelProto::kProducerVersion, m.producer_version);
    put_string(e.w(), s::ModelProto::kDomain, m.model_domain);
    if (m.version) e.w().field_int64(s::ModelProto::kModelVersion, m.version->raw);
    put_string(e.w(), s::ModelProto::kDocString, m.doc);
    if (m.main_graph) graph(*m.main_graph, e.child(s::ModelProto::kGraph));
    put_opsets(e.w(), s::ModelProto::kOpsetImport, m.opset_imports);
    put_entries(e.w(), s::ModelProto::kMetadataProps, m.metadata_props);
    for (const FunctionBuilder& f : m.functions) function(f, e.child(s::ModelProto::kFunctions));
  }

 private:
  // Initializers of a subgraph are initializers too, wherever the graph sits.
  void graph(const GraphBuilder& g, std::uint32_t id) {
    Encoder e(plan_, id);
    for (const NodeBuilder& n : g.nodes) node(n, e.child(s::GraphProto::kNode));
    put_string(e.w(), s::GraphProto::kName, g.name);
    for (const TensorBuilder& t : g.initializers) {
      tensor(t, e.child(s::GraphProto::kInitializer), false);
    }
    put_string(e.w(), s::GraphProto::kDocString, g.doc);
    put_value_infos(e.w(), s::GraphProto::kInput, g.inputs);
    put_value_infos(e.w(), s::GraphProto::kOutput, g.outputs);
    put_value_infos(e.w(), s::GraphProto::kValueInfo, g.value_infos);
    for (const SparseTensorBuilder& t : g.sparse_initializers) {
      sparse(t, e.child(s::GraphProto::kSparseInitializer), false);
    }
    put_entries(e.w(), s::GraphProto::kMetadataProps, g.metadata_props);
  }

  void node(const NodeBuilder& n, std::uint32_t id) {
    Encoder e(plan_, id);
    for (const auto& in : n.inputs) e.w().field_string(s::NodeProto::kInput, in);
    for (const auto& out : n.outputs) e.w().field_string(s::NodeProto::kOutput, out);
    put_string(e.w(), s::NodeProto::kName, n.node_name);
    e.w().field_string(s::NodeProto::kOpType, n.op_type);
    for (const AttributeBuilder& a : n.attributes) attribute(a, e.child(s::NodeProto::kAttribute));
    put_string(e.w(), s::NodeProto::kDocString, n.doc);
    put_string(e.w(), s::NodeProto::kDomain, n.node_domain);
    put_string(e.w(), s::NodeProto::kOverload, n.node_overload);
    put_entries(e.w(), s::NodeProto::kMetadataProps, n.metadata_props);
  }

  void function(const FunctionBuilder& f, std::uint32_t id) {
    in_function_ = true;  // onnx's external-data helpers never look into functions
    Encoder e(plan_, id);
    e.w().field_string(s::FunctionProto::kName, f.name);
    for (const auto& in : f.inputs) e.w().field_string(s::FunctionProto::kInput, in);
    for (const auto& out : f.outputs) e.w().field_string(s::FunctionProto::kOutput, out);
    for (const auto& a : f.attributes) e.w().field_string(s::FunctionProto::kAttribute, a);
    for (const NodeBuilder& n : f.nodes) node(n, e.child(s::FunctionProto::kNode));
    put_string(e.w(), s::FunctionProto::kDocString, f.doc_string);
    put_opsets(e.w(), s::FunctionProto::kOpsetImport, f.opset_imports);
    put_string(e.w(), s::FunctionProto::kDomain, f.domain);
    for (const AttributeBuilder& a : f.attribute_defaults) {
      attribute(a, e.child(s::FunctionProto::kAttributeProto));
    }
    put_value_infos(e.w(), s::FunctionProto::kValueInfo, f.value_infos);
    put_string(e.w(), s::FunctionProto::kOverload, f.overload);
    put_entries(e.w(), s::FunctionProto::kMetadataProps, f.metadata_props);
    in_function_ = false;
  }

  void attribute(const AttributeBuilder& a, std::uint32_t id);

  // `movable`: a place where onnx's external-data helpers look too (not functions, not sparse
  // tensors), so that what onnxmap moves out, onnx.load brings back.
  void tensor(const TensorBuilder& t, std::uint32_t id, bool in_attribute, bool movable = true) {
    using TP = s::TensorProto;
    Encoder e(plan_, id);
    for (const std::int64_t d : t.dims()) e.w().field_int64(TP::kDims, d);
    e.w().field_int32(TP::kDataType, static_cast<std::int32_t>(t.type()));
    for (const auto& text : t.string_values()) e.w().field_string(TP::kStringData, text);
    put_string(e.w(), TP::kName, t.name());
    put_string(e.w(), TP::kDocString, t.doc());
    put_entries(e.w(), TP::kMetadataProps, t.metadata_props());
    if (t.type() == DataType::string) return;
    e.flush();
    Chunk payload{nullptr, 0, t.byte_size()};
    if (t.generator()) {
      plan_.keep(t.generator());
      payload.generate = t.generator().get();
    } else if (t.is_zeros()) {
      payload.hole = true;
    } else {
      if (t.owner()) plan_.keep(t.owner());
      payload.source = &plan_.own_source(std::make_unique<SourceFile>(t.bytes()));
    }
    PayloadInfo info;
    info.name = t.name();
    info.size = t.byte_size();
    info.in_attribute = in_attribute;
    info.movable = movable && !in_function_;
    if (layout_.goes_external(info)) ++result_.external_tensors;
    layout_.append_data(plan_, id, info, payload, {});
  }

  void sparse(const SparseTensorBuilder& t, std::uint32_t id, bool in_attribute) {
    Encoder e(plan_, id);
    tensor(t.values, e.child(s::SparseTensorProto::kValues), in_attribute, false);
    tensor(t.indices, e.child(s::SparseTensorProto::kIndices), in_attribute, false);
    for (const std::int64_t d : t.dims) e.w().field_int64(s::SparseTensorProto::kDims, d);
  }

  DataLayout& layout_;
  Plan& plan_;
  SaveResult& result_;
  bool in_function_ = false;
};

// The AttributeProto field and type of each alternative of AttributeValue, in variant order.
struct AttributeField {
  std::uint32_t field;
  AttributeType type;
};
constexpr AttributeField kAttributeFields[] = {
    {s::AttributeProto::kF, AttributeType::float32},
    {s::AttributeProto::kI, AttributeType::int64},
    {s::AttributeProto::kS, AttributeType::string},
    {s::AttributeProto::kT, AttributeType::tensor},
    {s::AttributeProto::kG, AttributeType::graph},
    {s::AttributeProto::kFloats, AttributeType::floats},
    {s::AttributeProto::kInts, AttributeType::ints},
    {s::AttributeProto::kStrings, AttributeType::strings},
    {s::AttributeProto::kTensors, AttributeType::tensors},
    {s::AttributeProto::kGraphs, AttributeType::graphs},
    {s::AttributeProto::kSparseTensor, AttributeType::sparse_tensor},
    {s::AttributeProto::kSparseTensors, AttributeType::sparse_tensors},
    {s::AttributeProto::kTp, AttributeType::type_proto},
    {s::AttributeProto::kTypeProtos, AttributeType::type_protos},
};
static_assert(std::size(kAttributeFields) == std::variant_size_v<AttributeValue>);

template <class... Fns>
struct Overloaded : Fns... {
  using Fns::operator()...;
};
// Spelled out for clang 14 (the fuzz build), which does not deduce aggregates' arguments.
template <class... Fns>
Overloaded(Fns...) -> Overloaded<Fns...>;

void BuilderPlanner::attribute(const AttributeBuilder& a, std::uint32_t id) {
  using AP = s::AttributeProto;
  Encoder e(plan_, id);
  e.w().field_string(AP::kName, a.name);
  AttributeType type = a.ref_type;
  if (a.value) {
    const AttributeField where = kAttributeFields[a.value->index()];
    type = where.type;
    wire::Writer& w = e.w();
    std::visit(
        Overloaded{
            [&](float v) { w.field_float(where.field, v); },
            [&](std::int64_t v) { w.field_int64(where.field, v); },
            [&](const std::string& v) { w.field_string(where.field, v); },
            [&](const TensorBuilder& v) { tensor(v, e.child(where.field), true); },
            [&](const std::shared_ptr<GraphBuilder>& v) { graph(*v, e.child(where.field)); },
            // onnx.proto is proto2: floats and ints are unpacked, as libprotobuf writes them.
            [&](const std::vector<float>& v) {
              for (const float f : v) w.field_float(where.field, f);
            },
            [&](const std::vector<std::int64_t>& v) {
              for (const std::int64_t i : v) w.field_int64(where.field, i);
            },
            [&](const std::vector<std::string>& v) {
              for (const auto& text : v) w.field_string(where.field, text);
            },
            [&](const std::vector<TensorBuilder>& v) {
              for (const auto& t : v) tensor(t, e.child(where.field), true);
            },
            [&](const std::vector<std::shared_ptr<GraphBuilder>>& v) {
              for (const auto& g : v) graph(*g, e.child(where.field));
            },
            [&](const SparseTensorBuilder& v) { sparse(v, e.child(where.field), true); },
            [&](const std::vector<SparseTensorBuilder>& v) {
              for (const auto& t : v) sparse(t, e.child(where.field), true);
            },
            [&](const TypeSpec& v) { w.field_bytes(where.field, type_bytes(v)); },
            [&](const std::vector<TypeSpec>& v) {
              for (const auto& t : v) w.field_bytes(where.field, type_bytes(t));
            },
        },
        *a.value);
  }
  put_string(e.w(), AP::kDocString, a.doc_string);
  e.w().field_int32(AP::kType, static_cast<std::int32_t>(type));
  put_string(e.w(), AP::kRefAttrName, a.ref_attr_name);
}

}  // namespace

void plan_builder(const ModelBuilder& model, DataLayout& layout, Plan& plan, SaveResult& result) {
  BuilderPlanner(layout, plan, result).model(model);
}

}  // namespace onnxmap::detail
