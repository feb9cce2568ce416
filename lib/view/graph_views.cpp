// Views of the structural messages: graphs, nodes, attributes, value infos, functions, training
// info, sparse tensors. Each getter decodes its field from the message's bytes when called.

#include "onnxmap/tensor.hpp"
#include "onnxmap/views.hpp"
#include "view/leaf.hpp"

namespace onnxmap {

namespace {

using detail::ModelIndex;

template <class View>
ViewRange<View> range(const ModelIndex* index, std::pair<std::uint32_t, std::uint32_t> ids) {
  return detail::ViewAccess::range<View>(index, ids);
}

// The single indexed child in field `number` (merged if given twice), if present.
template <class View>
std::optional<View> single(const ModelIndex* index, std::pair<std::uint32_t, std::uint32_t> ids) {
  if (ids.first == ids.second) return std::nullopt;
  return detail::ViewAccess::make<View>(index, ids.first);
}

std::vector<Tensor> tensors_of(const ModelIndex* index,
                               std::pair<std::uint32_t, std::uint32_t> ids) {
  std::vector<Tensor> out;
  out.reserve(ids.second - ids.first);
  for (std::uint32_t id = ids.first; id < ids.second; ++id) {
    out.push_back(detail::ViewAccess::make<Tensor>(index, index->tensor_of_message(id)));
  }
  return out;
}

std::optional<Tensor> tensor_of(const ModelIndex* index,
                                std::pair<std::uint32_t, std::uint32_t> ids) {
  if (ids.first == ids.second) return std::nullopt;
  return detail::ViewAccess::make<Tensor>(index, index->tensor_of_message(ids.first));
}

}  // namespace

// --- ValueInfo ---------------------------------------------------------------------------------
using VI = schema::ValueInfoProto;
std::string_view ValueInfo::name() const {
  return detail::Fields(index_, record_).string_field(VI::kName);
}
Type ValueInfo::type() const {
  return detail::ViewAccess::type(index_, detail::Fields(index_, record_).message_field(VI::kType));
}
std::string_view ValueInfo::doc_string() const {
  return detail::Fields(index_, record_).string_field(VI::kDocString);
}
std::vector<StringStringEntry> ValueInfo::metadata_props() const {
  return detail::decode_entries(index_,
                                detail::Fields(index_, record_).messages_field(VI::kMetadataProps));
}

// --- Attribute ---------------------------------------------------------------------------------
using AP = schema::AttributeProto;
std::string_view Attribute::name() const {
  return detail::Fields(index_, record_).string_field(AP::kName);
}
AttributeType Attribute::type() const {
  // proto2: a value outside the enum is an unknown field, so the last known one stands.
  AttributeType type = AttributeType::undefined;
  for (const std::int64_t v : detail::Fields(index_, record_).int64s_field(AP::kType)) {
    if (v >= 0 && v <= kMaxAttributeType) type = static_cast<AttributeType>(v);
  }
  return type;
}
std::string_view Attribute::ref_attr_name() const {
  return detail::Fields(index_, record_).string_field(AP::kRefAttrName);
}
std::string_view Attribute::doc_string() const {
  return detail::Fields(index_, record_).string_field(AP::kDocString);
}
float Attribute::f() const {
  return wire::as_float(detail::Fields(index_, record_).fixed32_field(AP::kF).value_or(0));
}
std::int64_t Attribute::i() const {
  return wire::as_int64(detail::Fields(index_, record_).varint_field(AP::kI).value_or(0));
}
std::string_view Attribute::s() const {
  return detail::Fields(index_, record_).string_field(AP::kS);
}
std::optional<Tensor> Attribute::t() const {
  return tensor_of(index_, index_->children(record_, AP::kT));
}
std::optional<Graph> Attribute::g() const {
  return single<Graph>(index_, index_->children(record_, AP::kG));
}
std::optional<SparseTensor> Attribute::sparse_tensor() const {
  return single<SparseTensor>(index_, index_->children(record_, AP::kSparseTensor));
}
std::optional<Type> Attribute::tp() const {
  auto spans = detail::Fields(index_, record_).message_field(AP::kTp);
  if (spans.empty()) return std::nullopt;
  return detail::ViewAccess::type(index_, std::move(spans));
}
std::vector<float> Attribute::floats() const {
  return detail::Fields(index_, record_).floats_field(AP::kFloats);
}
std::vector<std::int64_t> Attribute::ints() const {
  return detail::Fields(index_, record_).int64s_field(AP::kInts);
}
std::vector<std::string_view> Attribute::strings() const {
  return detail::Fields(index_, record_).strings_field(AP::kStrings);
}
std::vector<Tensor> Attribute::tensors() const {
  return tensors_of(index_, index_->children(record_, AP::kTensors));
}
ViewRange<Graph> Attribute::graphs() const {
  return range<Graph>(index_, index_->children(record_, AP::kGraphs));
}
ViewRange<SparseTensor> Attribute::sparse_tensors() const {
  return range<SparseTensor>(index_, index_->children(record_, AP::kSparseTensors));
}
std::vector<Type> Attribute::type_protos() const {
  std::vector<Type> out;
  for (auto& spans : detail::Fields(index_, record_).messages_field(AP::kTypeProtos)) {
    out.push_back(detail::ViewAccess::type(index_, std::move(spans)));
  }
  return out;
}

// --- Node --------------------------------------------------------------------------------------
using NP = schema::NodeProto;
Names Node::inputs() const {
  return detail::ViewAccess::names(index_, record_, NP::kInput);
}
Names Node::outputs() const {
  return detail::ViewAccess::names(index_, record_, NP::kOutput);
}
std::string_view Node::name() const {
  return detail::Fields(index_, record_).string_field(NP::kName);
}
std::string_view Node::op_type() const {
  return detail::Fields(index_, record_).string_field(NP::kOpType);
}
std::string_view Node::domain() const {
  return detail::Fields(index_, record_).string_field(NP::kDomain);
}
std::string_view Node::overload() const {
  return detail::Fields(index_, record_).string_field(NP::kOverload);
}
std::string_view Node::doc_string() const {
  return detail::Fields(index_, record_).string_field(NP::kDocString);
}
ViewRange<Attribute> Node::attributes() const {
  return range<Attribute>(index_, index_->children(record_, NP::kAttribute));
}
std::optional<Attribute> Node::attribute(std::string_view name) const {
  for (const Attribute attribute : attributes()) {
    if (attribute.name() == name) return attribute;
  }
  return std::nullopt;
}
std::vector<StringStringEntry> Node::metadata_props() const {
  return detail::decode_entries(index_,
                                detail::Fields(index_, record_).messages_field(NP::kMetadataProps));
}

// --- Graph -------------------------------------------------------------------------------------
using GP = schema::GraphProto;
std::string_view Graph::name() const {
  return detail::Fields(index_, record_).string_field(GP::kName);
}
std::string_view Graph::doc_string() const {
  return detail::Fields(index_, record_).string_field(GP::kDocString);
}
ViewRange<Node> Graph::nodes() const {
  return range<Node>(index_, index_->children(record_, GP::kNode));
}
std::vector<Tensor> Graph::initializers() const {
  return tensors_of(index_, index_->children(record_, GP::kInitializer));
}
ViewRange<SparseTensor> Graph::sparse_initializers() const {
  return range<SparseTensor>(index_, index_->children(record_, GP::kSparseInitializer));
}
ViewRange<ValueInfo> Graph::inputs() const {
  return range<ValueInfo>(index_, index_->children(record_, GP::kInput));
}
ViewRange<ValueInfo> Graph::outputs() const {
  return range<ValueInfo>(index_, index_->children(record_, GP::kOutput));
}
ViewRange<ValueInfo> Graph::value_infos() const {
  return range<ValueInfo>(index_, index_->children(record_, GP::kValueInfo));
}
std::vector<StringStringEntry> Graph::metadata_props() const {
  return detail::decode_entries(index_,
                                detail::Fields(index_, record_).messages_field(GP::kMetadataProps));
}

// --- SparseTensor ------------------------------------------------------------------------------
using SP = schema::SparseTensorProto;
std::optional<Tensor> SparseTensor::values() const {
  return tensor_of(index_, index_->children(record_, SP::kValues));
}
std::optional<Tensor> SparseTensor::indices() const {
  return tensor_of(index_, index_->children(record_, SP::kIndices));
}
std::vector<std::int64_t> SparseTensor::dims() const {
  return detail::Fields(index_, record_).int64s_field(SP::kDims);
}

// --- Function ----------------------------------------------------------------------------------
using FP = schema::FunctionProto;
std::string_view Function::name() const {
  return detail::Fields(index_, record_).string_field(FP::kName);
}
std::string_view Function::domain() const {
  return detail::Fields(index_, record_).string_field(FP::kDomain);
}
std::string_view Function::overload() const {
  return detail::Fields(index_, record_).string_field(FP::kOverload);
}
std::string_view Function::doc_string() const {
  return detail::Fields(index_, record_).string_field(FP::kDocString);
}
Names Function::inputs() const {
  return detail::ViewAccess::names(index_, record_, FP::kInput);
}
Names Function::outputs() const {
  return detail::ViewAccess::names(index_, record_, FP::kOutput);
}
Names Function::attribute_names() const {
  return detail::ViewAccess::names(index_, record_, FP::kAttribute);
}
ViewRange<Attribute> Function::attribute_defaults() const {
  return range<Attribute>(index_, index_->children(record_, FP::kAttributeProto));
}
ViewRange<Node> Function::nodes() const {
  return range<Node>(index_, index_->children(record_, FP::kNode));
}
std::vector<OperatorSetId> Function::opset_imports() const {
  return detail::decode_opsets(index_,
                               detail::Fields(index_, record_).messages_field(FP::kOpsetImport));
}
ViewRange<ValueInfo> Function::value_infos() const {
  return range<ValueInfo>(index_, index_->children(record_, FP::kValueInfo));
}
std::vector<StringStringEntry> Function::metadata_props() const {
  return detail::decode_entries(index_,
                                detail::Fields(index_, record_).messages_field(FP::kMetadataProps));
}

// --- TrainingInfo ------------------------------------------------------------------------------
using TI = schema::TrainingInfoProto;
std::optional<Graph> TrainingInfo::initialization() const {
  return single<Graph>(index_, index_->children(record_, TI::kInitialization));
}
std::optional<Graph> TrainingInfo::algorithm() const {
  return single<Graph>(index_, index_->children(record_, TI::kAlgorithm));
}
std::vector<StringStringEntry> TrainingInfo::initialization_binding() const {
  return detail::decode_entries(
      index_, detail::Fields(index_, record_).messages_field(TI::kInitializationBinding));
}
std::vector<StringStringEntry> TrainingInfo::update_binding() const {
  return detail::decode_entries(index_,
                                detail::Fields(index_, record_).messages_field(TI::kUpdateBinding));
}

}  // namespace onnxmap
