#pragma once
// Decoding of the small leaf messages that the index does not record (string pairs, opset ids).

#include <vector>

#include "onnxmap/views.hpp"
#include "view/fields.hpp"
#include "view/view_access.hpp"
#include "wire/wire.hpp"

namespace onnxmap::detail {

[[nodiscard]] inline std::vector<StringStringEntry> decode_entries(
    const ModelIndex* index, const std::vector<SpanList>& messages) {
  std::vector<StringStringEntry> out;
  out.reserve(messages.size());
  for (const SpanList& spans : messages) {
    const Fields entry(index, spans);
    out.push_back({entry.string_field(schema::StringStringEntryProto::kKey),
                   entry.string_field(schema::StringStringEntryProto::kValue)});
  }
  return out;
}

[[nodiscard]] inline std::vector<OperatorSetId> decode_opsets(
    const ModelIndex* index, const std::vector<SpanList>& messages) {
  std::vector<OperatorSetId> out;
  out.reserve(messages.size());
  for (const SpanList& spans : messages) {
    const Fields opset(index, spans);
    out.push_back(
        {opset.string_field(schema::OperatorSetIdProto::kDomain),
         wire::as_int64(opset.varint_field(schema::OperatorSetIdProto::kVersion).value_or(0))});
  }
  return out;
}

}  // namespace onnxmap::detail
