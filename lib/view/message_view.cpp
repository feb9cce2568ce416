// Field decoding shared by every view: walk the message's spans and pick the fields asked for.
// The index validated these bytes at open, so these walks cannot fail on structure.

#include "onnxmap/detail/message_view.hpp"

#include "index/field_cursor.hpp"
#include "index/model_index.hpp"

namespace onnxmap::detail {

namespace {

// The model's bytes; null for a default-constructed view, whose span list is empty.
const std::byte* file_of(const ModelIndex* index) noexcept {
  return index != nullptr ? index->file.bytes().data() : nullptr;
}

// The field at `pos` (before `end`) into `field`, and the position after it: the cursor's inline
// decoding of the common forms, wire::Reader for the rest.
const std::byte* read_field(const std::byte* file, const std::byte* pos, const std::byte* end,
                            CursorField& field) {
  if (const std::byte* next = cursor_detail::decode_common_field(pos, end, field)) return next;
  const GeneralField general = read_field_general(file, pos, end);
  field = general.field;
  return general.next;
}

// The next LEN field `number` in [pos, end): its payload into `payload`, and the position after
// it; nullptr when there is none. The inner loop takes the fields a graph walk reads most, short
// strings (a one-byte tag and a one-byte length), a field number of 0 among them (the pass
// rejected those at open, and here it only never matches); any other field is read by the
// cursor, and every length is checked against `end`.
inline const std::byte* find_len_field(const std::byte* file, const std::byte* pos,
                                       const std::byte* end, std::uint32_t number,
                                       std::string_view& payload) {
  while (pos != end) {
    while (end - pos >= 2) {
      const unsigned tag = cursor_detail::byte_at(pos);
      const unsigned length = cursor_detail::byte_at(pos + 1);
      // (tag & 0x87) == 2: a one-byte tag of wire type LEN.
      if ((tag & 0x87U) != 0x02U || length >= 0x80U ||
          length > static_cast<std::size_t>(end - pos - 2)) {
        break;
      }
      const std::byte* next = pos + 2 + length;
      if ((tag >> 3U) == number) {
        payload = {reinterpret_cast<const char*>(pos + 2), length};
        return next;
      }
      pos = next;
    }
    if (pos == end) break;
    CursorField field;
    pos = read_field(file, pos, end, field);
    if (field.number == number && field.type == wire::WireType::len) {
      payload = wire::as_string(field.bytes());
      return pos;
    }
  }
  return nullptr;
}

// Calls fn(value) for every LEN occurrence of field `number` in `spans`, in wire order.
template <class Fn>
void for_each_string(const ModelIndex* index, const SpanList& spans, std::uint32_t number,
                     Fn&& fn) {
  const std::byte* const file = file_of(index);
  for (const Span& span : spans) {
    const std::byte* pos = file + span.offset;
    const std::byte* const end = pos + span.length;
    std::string_view value;
    while ((pos = find_len_field(file, pos, end, number, value)) != nullptr) fn(value);
  }
}

// Calls fn(field) for every field in `spans`, in wire order.
template <class Fn>
void for_each_field_in(const ModelIndex* index, const SpanList& spans, Fn&& fn) {
  const std::byte* const file = file_of(index);
  for (const Span& span : spans) {
    const std::byte* pos = file + span.offset;
    const std::byte* const end = pos + span.length;
    while (pos != end) {
      CursorField field;
      pos = read_field(file, pos, end, field);
      fn(field);
    }
  }
}

// Calls fn(field) for every occurrence of field `number` in `spans`, in wire order.
template <class Fn>
void for_each_occurrence(const ModelIndex* index, const SpanList& spans, std::uint32_t number,
                         Fn&& fn) {
  for_each_field_in(index, spans, [&](const CursorField& field) {
    if (field.number == number) fn(field);
  });
}

// The wire::Field form of `field`, for wire's packed-list readers.
wire::Field wire_field(const std::byte* file, const CursorField& field) {
  const bool has_bytes =
      field.type == wire::WireType::len || field.type == wire::WireType::start_group;
  return {field.number,
          field.type,
          has_bytes ? 0 : field.value,
          has_bytes ? field.bytes() : wire::Bytes{},
          field.tag_offset(file),
          static_cast<std::uint64_t>(field.payload - file)};
}

}  // namespace

MessageView::MessageView(const ModelIndex* index, std::uint32_t record)
    : index_(index), record_(record) {
  // Every view of a graph walk is made here: the common one-span case without a call.
  if (index->messages[record].merged == 0) {
    spans_.push_back(index->span(record));
  } else {
    spans_ = index->spans(record);
  }
}

bool MessageView::has(std::uint32_t number) const {
  bool found = false;
  for_each_occurrence(index_, spans_, number, [&](const CursorField&) { found = true; });
  return found;
}

std::string_view MessageView::string_field(std::uint32_t number) const {
  std::string_view value;
  for_each_string(index_, spans_, number, [&](std::string_view v) { value = v; });
  return value;
}

std::optional<std::uint64_t> MessageView::varint_field(std::uint32_t number) const {
  std::optional<std::uint64_t> value;
  for_each_occurrence(index_, spans_, number, [&](const CursorField& f) {
    if (f.type == wire::WireType::varint) value = f.value;
  });
  return value;
}

std::optional<std::uint32_t> MessageView::fixed32_field(std::uint32_t number) const {
  std::optional<std::uint32_t> value;
  for_each_occurrence(index_, spans_, number, [&](const CursorField& f) {
    if (f.type == wire::WireType::i32) value = static_cast<std::uint32_t>(f.value);
  });
  return value;
}

std::vector<std::string_view> MessageView::strings_field(std::uint32_t number) const {
  std::vector<std::string_view> values;
  for_each_string(index_, spans_, number, [&](std::string_view v) { values.push_back(v); });
  return values;
}

std::vector<std::int64_t> MessageView::int64s_field(std::uint32_t number) const {
  std::vector<std::int64_t> values;
  const std::byte* const file = file_of(index_);
  for_each_occurrence(index_, spans_, number, [&](const CursorField& f) {
    (void)wire::for_each_varint(wire_field(file, f),
                                [&](std::uint64_t v) { values.push_back(wire::as_int64(v)); });
  });
  return values;
}

std::vector<float> MessageView::floats_field(std::uint32_t number) const {
  std::vector<float> values;
  const std::byte* const file = file_of(index_);
  for_each_occurrence(index_, spans_, number, [&](const CursorField& f) {
    (void)wire::for_each_fixed32(wire_field(file, f),
                                 [&](std::uint32_t v) { values.push_back(wire::as_float(v)); });
  });
  return values;
}

Names MessageView::names_field(std::uint32_t number) const {
  // One span, the common case, without copying the list's (empty) vector.
  SpanList spans;
  if (spans_.size() == 1) {
    spans.push_back(spans_.front());
  } else {
    spans = spans_;
  }
  return Names(file_of(index_), std::move(spans), number);
}

SpanList MessageView::message_field(std::uint32_t number) const {
  SpanList spans;
  const std::byte* const file = file_of(index_);
  for_each_occurrence(index_, spans_, number, [&](const CursorField& f) {
    if (f.type == wire::WireType::len) spans.push_back(f.payload_span(file));
  });
  return spans;
}

std::vector<SpanList> MessageView::messages_field(std::uint32_t number) const {
  std::vector<SpanList> values;
  const std::byte* const file = file_of(index_);
  for_each_occurrence(index_, spans_, number, [&](const CursorField& f) {
    if (f.type == wire::WireType::len) values.push_back(SpanList{f.payload_span(file)});
  });
  return values;
}

std::uint32_t MessageView::last_of(std::uint32_t a, std::uint32_t b) const {
  std::uint32_t last = 0;
  for_each_field_in(index_, spans_, [&](const CursorField& f) {
    if (f.number == a || f.number == b) last = f.number;
  });
  return last;
}

std::pair<std::uint32_t, std::uint32_t> MessageView::children(std::uint32_t number) const {
  return index_->children(record_, number);
}

}  // namespace onnxmap::detail

namespace onnxmap {

using detail::CursorField;
using detail::Span;

Names::iterator Names::begin() const {
  iterator it;
  it.owner_ = this;
  if (spans_.empty()) return end();
  it.pos_ = file_ + spans_.front().offset;
  find_next(it);
  return it;
}

std::size_t Names::size() const {
  std::size_t count = 0;
  for (const Span& span : spans_) {
    const std::byte* pos = file_ + span.offset;
    const std::byte* const end = pos + span.length;
    std::string_view value;
    while ((pos = detail::find_len_field(file_, pos, end, number_, value)) != nullptr) ++count;
  }
  return count;
}

std::vector<std::string_view> Names::to_vector() const {
  return {begin(), end()};
}

// The index validated these bytes at open, so the walk cannot fail on structure; the general
// reader still backs every uncommon form, as in every other view.
void Names::find_next(iterator& it) const {
  while (it.span_ < spans_.size()) {
    const Span& span = spans_.begin()[it.span_];
    const std::byte* const end = file_ + span.offset + span.length;
    it.pos_ = detail::find_len_field(file_, it.pos_, end, number_, it.value_);
    if (it.pos_ != nullptr) return;
    ++it.span_;
    it.pos_ = it.span_ < spans_.size() ? file_ + spans_.begin()[it.span_].offset : nullptr;
  }
  it.pos_ = nullptr;
  it.value_ = {};
}
}  // namespace onnxmap
