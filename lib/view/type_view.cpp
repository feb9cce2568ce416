// TypeProto and its oneof kinds, decoded from the bytes on touch (types are leaf messages).

#include <string>

#include "onnxmap/views.hpp"
#include "view/fields.hpp"
#include "view/view_access.hpp"
#include "wire/cursor.hpp"

namespace onnxmap {

namespace {

using TypeFields = schema::TypeProto;

Type::Kind kind_of_field(std::uint32_t number) {
  switch (number) {
    case TypeFields::kTensorType: return Type::Kind::tensor;
    case TypeFields::kSequenceType: return Type::Kind::sequence;
    case TypeFields::kMapType: return Type::Kind::map;
    case TypeFields::kOptionalType: return Type::Kind::optional;
    case TypeFields::kSparseTensorType: return Type::Kind::sparse_tensor;
    case TypeFields::kOpaqueType: return Type::Kind::opaque;
    default: return Type::Kind::none;
  }
}

// The oneof member set last, with only its occurrences after the last switch (protobuf clears a
// oneof when another member is set, and merges repeats of the same member).
detail::SpanList kind_spans(const detail::ModelIndex* index, const detail::SpanList& spans) {
  detail::SpanList member;
  std::uint32_t current = 0;
  for (const ByteRange& span : spans) {
    wire::Cursor cursor(index->bytes(span), span.offset);
    while (cursor.next()) {
      const wire::Field& field = cursor.field();
      if (kind_of_field(field.number) == Type::Kind::none || field.type != wire::WireType::len) {
        continue;
      }
      if (field.number != current) {
        current = field.number;
        member = detail::SpanList{};
      }
      member.push_back(cursor.payload_span());
    }
  }
  return member;
}

}  // namespace

Type::Kind Type::kind() const {
  if (index_ == nullptr) return Kind::none;
  std::uint32_t last = 0;
  for (const ByteRange& span : detail::ViewAccess::spans(*this)) {
    wire::Cursor cursor(index_->bytes(span), span.offset);
    while (cursor.next()) {
      const wire::Field& field = cursor.field();
      if (kind_of_field(field.number) != Kind::none && field.type == wire::WireType::len) {
        last = field.number;
      }
    }
  }
  return kind_of_field(last);
}

std::string_view Type::denotation() const {
  return detail::Fields(index_, detail::ViewAccess::spans(*this))
      .string_field(TypeFields::kDenotation);
}

DataType Type::elem_type() const {
  const Kind k = kind();
  if (k != Kind::tensor && k != Kind::sparse_tensor) return DataType::undefined;
  // TypeProto.Tensor and TypeProto.SparseTensor share field numbers.
  const detail::Fields member(index_, kind_spans(index_, detail::ViewAccess::spans(*this)));
  return static_cast<DataType>(
      wire::as_int32(member.varint_field(schema::TypeProtoTensor::kElemType).value_or(0)));
}

std::optional<std::vector<Dimension>> Type::shape() const {
  const Kind k = kind();
  if (k != Kind::tensor && k != Kind::sparse_tensor) return std::nullopt;
  const detail::Fields member(index_, kind_spans(index_, detail::ViewAccess::spans(*this)));
  auto shape_spans = member.message_field(schema::TypeProtoTensor::kShape);
  if (shape_spans.empty()) return std::nullopt;
  const detail::Fields shape(index_, std::move(shape_spans));
  std::vector<Dimension> dims;
  using DP = schema::TensorShapeProtoDimension;
  for (auto& dim_spans : shape.messages_field(schema::TensorShapeProto::kDim)) {
    Dimension dim;
    for (const ByteRange& span : dim_spans) {
      wire::Cursor cursor(index_->bytes(span), span.offset);
      while (cursor.next()) {
        const wire::Field& field = cursor.field();
        // dim_value and dim_param are a oneof: the one set last wins.
        if (field.number == DP::kDimValue && field.type == wire::WireType::varint) {
          dim.value = wire::as_int64(field.value);
          dim.param = {};
        } else if (field.number == DP::kDimParam && field.type == wire::WireType::len) {
          dim.param = field.text();
          dim.value.reset();
        } else if (field.number == DP::kDenotation && field.type == wire::WireType::len) {
          dim.denotation = field.text();
        }
      }
    }
    dims.push_back(dim);
  }
  return dims;
}

Type Type::element() const {
  const Kind k = kind();
  const detail::Fields member(index_, kind_spans(index_, detail::ViewAccess::spans(*this)));
  // Sequence.elem_type, Optional.elem_type and Map.value_type.
  if (k == Kind::sequence)
    return detail::ViewAccess::type(index_,
                                    member.message_field(schema::TypeProtoSequence::kElemType));
  if (k == Kind::optional)
    return detail::ViewAccess::type(index_,
                                    member.message_field(schema::TypeProtoOptional::kElemType));
  if (k == Kind::map)
    return detail::ViewAccess::type(index_, member.message_field(schema::TypeProtoMap::kValueType));
  return {};
}

DataType Type::map_key_type() const {
  if (kind() != Kind::map) return DataType::undefined;
  const detail::Fields member(index_, kind_spans(index_, detail::ViewAccess::spans(*this)));
  return static_cast<DataType>(
      wire::as_int32(member.varint_field(schema::TypeProtoMap::kKeyType).value_or(0)));
}

std::string_view Type::opaque_domain() const {
  if (kind() != Kind::opaque) return {};
  return detail::Fields(index_, kind_spans(index_, detail::ViewAccess::spans(*this)))
      .string_field(schema::TypeProtoOpaque::kDomain);
}

std::string_view Type::opaque_name() const {
  if (kind() != Kind::opaque) return {};
  return detail::Fields(index_, kind_spans(index_, detail::ViewAccess::spans(*this)))
      .string_field(schema::TypeProtoOpaque::kName);
}

namespace {

// The text of a type with no element type: "?", "FLOAT[N, 3]", "sparse FLOAT", "opaque(d.n)".
std::string leaf_text(const Type& type) {
  switch (type.kind()) {
    case Type::Kind::tensor:
    case Type::Kind::sparse_tensor: {
      std::string out = type.kind() == Type::Kind::sparse_tensor ? "sparse " : "";
      out += to_string(type.elem_type());
      const auto dims = type.shape();
      if (!dims) return out;
      out += '[';
      for (std::size_t i = 0; i < dims->size(); ++i) {
        if (i > 0) out += ", ";
        const Dimension& d = (*dims)[i];
        out += d.value ? std::to_string(*d.value) : (d.param.empty() ? "?" : std::string(d.param));
      }
      return out + ']';
    }
    case Type::Kind::opaque:
      return "opaque(" + std::string(type.opaque_domain()) + "." + std::string(type.opaque_name()) +
             ")";
    default: return "?";
  }
}

}  // namespace

// A loop, not a recursion: a type nested as deep as max_depth allows must not exhaust the stack
// (sanitized builds have frames several times larger).
std::string Type::to_string() const {
  std::string prefix;
  std::size_t open = 0;
  for (Type type = *this;; type = type.element(), ++open) {
    switch (type.kind()) {
      case Kind::sequence: prefix += "seq("; break;
      case Kind::optional: prefix += "optional("; break;
      case Kind::map: prefix += "map(" + onnxmap::to_string(type.map_key_type()) + ", "; break;
      default: return prefix + leaf_text(type) + std::string(open, ')');
    }
  }
}

}  // namespace onnxmap
