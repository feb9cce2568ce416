#pragma once
// Decoding of the small leaf messages that the index does not record (string pairs, opset ids),
// and access to MessageView's field helpers for code inside the library.

#include "index/model_index.hpp"
#include "onnxmap/views.hpp"
#include "view/view_access.hpp"

namespace onnxmap::detail {

// A MessageView whose field helpers the library's own code may call.
class FieldAccess : public MessageView {
 public:
  FieldAccess(const ModelIndex* index, SpanList spans) : MessageView(index, std::move(spans)) {}
  FieldAccess(const ModelIndex* index, std::uint32_t record) : MessageView(index, record) {}
  using MessageView::children;
  using MessageView::floats_field;
  using MessageView::has;
  using MessageView::int64s_field;
  using MessageView::last_of;
  using MessageView::message_field;
  using MessageView::messages_field;
  using MessageView::string_field;
  using MessageView::strings_field;
  using MessageView::varint_field;
};

[[nodiscard]] inline std::vector<StringStringEntry> decode_entries(
    const ModelIndex* index, const std::vector<SpanList>& messages) {
  std::vector<StringStringEntry> out;
  out.reserve(messages.size());
  for (const SpanList& spans : messages) {
    const FieldAccess entry(index, spans);
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
    const FieldAccess opset(index, spans);
    out.push_back(
        {opset.string_field(schema::OperatorSetIdProto::kDomain),
         wire::as_int64(opset.varint_field(schema::OperatorSetIdProto::kVersion).value_or(0))});
  }
  return out;
}

}  // namespace onnxmap::detail
