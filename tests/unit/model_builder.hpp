#pragma once
// Hand-built ONNX wire bytes for tests: what python3-onnx cannot write (IR 9-14 fields, unpacked
// scalars, unknown fields, duplicates) and what we want to control byte for byte.

#include <cstring>
#include <functional>
#include <string_view>
#include <vector>

#include "onnxmap/schema.hpp"
#include "schema/fields.hpp"
#include "wire/wire.hpp"

namespace onnxmap::test {

using Body = std::function<void(wire::Writer&)>;

// Appends field `number` holding the message `body` writes.
inline void sub(wire::Writer& w, std::uint32_t number, const Body& body) {
  wire::Writer inner;
  body(inner);
  w.field_bytes(number, inner.bytes());
}

inline std::vector<std::byte> message(const Body& body) {
  wire::Writer w;
  body(w);
  return w.take();
}

inline std::vector<std::byte> bytes_of_text(std::string_view text) {
  const auto bytes = std::as_bytes(std::span(text.data(), text.size()));
  return {bytes.begin(), bytes.end()};
}

// A TensorProto with raw_data.
inline Body raw_tensor(std::string_view name, DataType type, std::vector<std::int64_t> dims,
                       std::vector<std::byte> raw) {
  return [=](wire::Writer& t) {
    using TP = schema::TensorProto;
    for (const std::int64_t d : dims) t.field_int64(TP::kDims, d);
    t.field_int32(TP::kDataType, static_cast<std::int32_t>(type));
    t.field_string(TP::kName, name);
    t.field_bytes(TP::kRawData, raw);
  };
}

inline std::vector<std::byte> float_bytes(const std::vector<float>& values) {
  std::vector<std::byte> out(values.size() * sizeof(float));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// A tensor-typed ValueInfoProto; a negative dim is written as dim_param "N".
inline Body tensor_value_info(std::string_view name, DataType type,
                              std::vector<std::int64_t> dims) {
  return [=](wire::Writer& v) {
    v.field_string(schema::ValueInfoProto::kName, name);
    sub(v, schema::ValueInfoProto::kType, [&](wire::Writer& type_proto) {
      sub(type_proto, schema::TypeProto::kTensorType, [&](wire::Writer& tensor) {
        tensor.field_int32(schema::TypeProtoTensor::kElemType, static_cast<std::int32_t>(type));
        sub(tensor, schema::TypeProtoTensor::kShape, [&](wire::Writer& shape) {
          for (const std::int64_t d : dims) {
            sub(shape, schema::TensorShapeProto::kDim, [&](wire::Writer& dim) {
              if (d >= 0) {
                dim.field_int64(schema::TensorShapeProtoDimension::kDimValue, d);
              } else {
                dim.field_string(schema::TensorShapeProtoDimension::kDimParam, "N");
              }
            });
          }
        });
      });
    });
  };
}

}  // namespace onnxmap::test
