// Field decoding shared by every view: walk the message's spans and pick the fields asked for.
// The index validated these bytes at open, so these walks cannot fail on structure.

#include "onnxmap/detail/message_view.hpp"

#include "index/model_index.hpp"

namespace onnxmap::detail {

namespace {

// Calls fn(field) for every occurrence of field `number` in `spans`, in wire order.
template <class Fn>
void for_each_occurrence(const ModelIndex& index, const SpanList& spans, std::uint32_t number,
                         Fn&& fn) {
  for (const Span& span : spans) {
    wire::Reader reader(index.bytes(span), span.offset);
    wire::Field field;
    while (reader.next(field)) {
      if (field.number == number) fn(field);
    }
  }
}

}  // namespace

MessageView::MessageView(const ModelIndex* index, std::uint32_t record)
    : index_(index), record_(record), spans_(index->spans(record)) {}

bool MessageView::has(std::uint32_t number) const {
  bool found = false;
  for_each_occurrence(*index_, spans_, number, [&](const wire::Field&) { found = true; });
  return found;
}

std::string_view MessageView::string_field(std::uint32_t number) const {
  std::string_view value;
  for_each_occurrence(*index_, spans_, number, [&](const wire::Field& f) {
    if (f.type == wire::WireType::len) value = wire::as_string(f.bytes);
  });
  return value;
}

std::optional<std::uint64_t> MessageView::varint_field(std::uint32_t number) const {
  std::optional<std::uint64_t> value;
  for_each_occurrence(*index_, spans_, number, [&](const wire::Field& f) {
    if (f.type == wire::WireType::varint) value = f.value;
  });
  return value;
}

std::optional<std::uint32_t> MessageView::fixed32_field(std::uint32_t number) const {
  std::optional<std::uint32_t> value;
  for_each_occurrence(*index_, spans_, number, [&](const wire::Field& f) {
    if (f.type == wire::WireType::i32) value = static_cast<std::uint32_t>(f.value);
  });
  return value;
}

std::vector<std::string_view> MessageView::strings_field(std::uint32_t number) const {
  std::vector<std::string_view> values;
  for_each_occurrence(*index_, spans_, number, [&](const wire::Field& f) {
    if (f.type == wire::WireType::len) values.push_back(wire::as_string(f.bytes));
  });
  return values;
}

std::vector<std::int64_t> MessageView::int64s_field(std::uint32_t number) const {
  std::vector<std::int64_t> values;
  for_each_occurrence(*index_, spans_, number, [&](const wire::Field& f) {
    (void)wire::for_each_varint(f, [&](std::uint64_t v) { values.push_back(wire::as_int64(v)); });
  });
  return values;
}

std::vector<float> MessageView::floats_field(std::uint32_t number) const {
  std::vector<float> values;
  for_each_occurrence(*index_, spans_, number, [&](const wire::Field& f) {
    (void)wire::for_each_fixed32(f, [&](std::uint32_t v) { values.push_back(wire::as_float(v)); });
  });
  return values;
}

SpanList MessageView::message_field(std::uint32_t number) const {
  SpanList spans;
  for_each_occurrence(*index_, spans_, number, [&](const wire::Field& f) {
    if (f.type == wire::WireType::len) spans.push_back({f.payload_offset, f.bytes.size()});
  });
  return spans;
}

std::vector<SpanList> MessageView::messages_field(std::uint32_t number) const {
  std::vector<SpanList> values;
  for_each_occurrence(*index_, spans_, number, [&](const wire::Field& f) {
    if (f.type == wire::WireType::len)
      values.push_back(SpanList{{f.payload_offset, f.bytes.size()}});
  });
  return values;
}

std::uint32_t MessageView::last_of(std::uint32_t a, std::uint32_t b) const {
  std::uint32_t last = 0;
  for (const Span& span : spans_) {
    wire::Reader reader(index_->bytes(span), span.offset);
    wire::Field field;
    while (reader.next(field)) {
      if (field.number == a || field.number == b) last = field.number;
    }
  }
  return last;
}

std::pair<std::uint32_t, std::uint32_t> MessageView::children(std::uint32_t number) const {
  return index_->children(record_, number);
}

}  // namespace onnxmap::detail
