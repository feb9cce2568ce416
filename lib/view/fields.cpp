// Field decoding shared by every view (fields.hpp), and the Names range.

#include "view/fields.hpp"

#include "io/read_check.hpp"
#include "wire/cursor.hpp"

namespace onnxmap::detail {

namespace {

// The model's bytes; null for a default-constructed view, whose span list is empty.
const std::byte* file_of(const ModelIndex* index) noexcept {
  return index != nullptr ? index->file.bytes().data() : nullptr;
}

// The next LEN field `number` in [pos, end): its payload into `payload`, and the position after
// it; nullptr when there is none.
const std::byte* find_len_field(const std::byte* pos, const std::byte* end, std::uint32_t number,
                                std::string_view& payload) {
  wire::Cursor cursor(wire::Bytes(pos, static_cast<std::size_t>(end - pos)));
  while (cursor.next(number)) {
    if (cursor.field().is_len()) {
      cursor.check_payload();  // the caller reads it
      payload = cursor.field().text();
      return pos + cursor.position();
    }
  }
  return nullptr;
}

// Calls fn(value) for every LEN occurrence of field `number` in `spans`, in wire order.
template <class Fn>
void for_each_string(const ModelIndex* index, const SpanList& spans, std::uint32_t number,
                     Fn&& fn) {
  for (const ByteRange& span : spans) {
    wire::Cursor cursor(file_of(index), span);
    while (cursor.next(number)) {
      if (!cursor.field().is_len()) continue;
      cursor.check_payload();  // the caller reads it
      fn(cursor.field().text());
    }
  }
}

// Calls fn(field, payload_offset) for every field in `spans`, in wire order.
template <class Fn>
void for_each_field_in(const ModelIndex* index, const SpanList& spans, Fn&& fn) {
  for (const ByteRange& span : spans) {
    wire::Cursor cursor(file_of(index), span);
    while (cursor.next()) fn(cursor.field(), cursor.payload_span());
  }
}

// Calls fn(field, payload) for every occurrence of field `number` in `spans`, in wire order;
// `payload` is its payload's span in the file.
template <class Fn>
void for_each_occurrence(const ModelIndex* index, const SpanList& spans, std::uint32_t number,
                         Fn&& fn) {
  for (const ByteRange& span : spans) {
    wire::Cursor cursor(file_of(index), span);
    while (cursor.next(number)) fn(cursor.field(), cursor.payload_span());
  }
}

}  // namespace

Fields::Fields(const ModelIndex* index, std::uint32_t record) : index_(index) {
  // Every getter of a record's view makes one: the common one-span case without a call.
  if (index->messages[record].merged == 0) {
    spans_.push_back(index->span(record));
  } else {
    spans_ = index->spans(record);
  }
}

bool Fields::has(std::uint32_t number) const {
  bool found = false;
  for_each_occurrence(index_, spans_, number, [&](const wire::Field&, ByteRange) { found = true; });
  return found;
}

std::string_view Fields::string_field(std::uint32_t number) const {
  std::string_view value;
  for_each_string(index_, spans_, number, [&](std::string_view v) { value = v; });
  return value;
}

std::optional<std::uint64_t> Fields::varint_field(std::uint32_t number) const {
  std::optional<std::uint64_t> value;
  for_each_occurrence(index_, spans_, number, [&](const wire::Field& f, ByteRange) {
    if (f.type == wire::WireType::varint) value = f.value;
  });
  return value;
}

std::optional<std::uint32_t> Fields::fixed32_field(std::uint32_t number) const {
  std::optional<std::uint32_t> value;
  for_each_occurrence(index_, spans_, number, [&](const wire::Field& f, ByteRange) {
    if (f.type == wire::WireType::i32) value = static_cast<std::uint32_t>(f.value);
  });
  return value;
}

std::vector<std::string_view> Fields::strings_field(std::uint32_t number) const {
  std::vector<std::string_view> values;
  for_each_string(index_, spans_, number, [&](std::string_view v) { values.push_back(v); });
  return values;
}

std::vector<std::int64_t> Fields::int64s_field(std::uint32_t number) const {
  std::vector<std::int64_t> values;
  for_each_occurrence(index_, spans_, number, [&](const wire::Field& f, ByteRange payload) {
    check_for_front_end(f.bytes());  // a packed list is decoded past what the cursor checked
    (void)wire::for_each_varint(f, payload.offset,
                                [&](std::uint64_t v) { values.push_back(wire::as_int64(v)); });
  });
  return values;
}

std::vector<float> Fields::floats_field(std::uint32_t number) const {
  std::vector<float> values;
  for_each_occurrence(index_, spans_, number, [&](const wire::Field& f, ByteRange payload) {
    check_for_front_end(f.bytes());
    (void)wire::for_each_fixed32(f, payload.offset,
                                 [&](std::uint32_t v) { values.push_back(wire::as_float(v)); });
  });
  return values;
}

SpanList Fields::message_field(std::uint32_t number) const {
  SpanList spans;
  for_each_occurrence(index_, spans_, number, [&](const wire::Field& f, ByteRange payload) {
    if (f.type == wire::WireType::len) spans.push_back(payload);
  });
  return spans;
}

std::vector<SpanList> Fields::messages_field(std::uint32_t number) const {
  std::vector<SpanList> values;
  for_each_occurrence(index_, spans_, number, [&](const wire::Field& f, ByteRange payload) {
    if (f.type == wire::WireType::len) values.push_back(SpanList{payload});
  });
  return values;
}

std::uint32_t Fields::last_of(std::uint32_t a, std::uint32_t b) const {
  std::uint32_t last = 0;
  for_each_field_in(index_, spans_, [&](const wire::Field& f, ByteRange) {
    if (f.number == a || f.number == b) last = f.number;
  });
  return last;
}

}  // namespace onnxmap::detail

namespace onnxmap {

Names::iterator Names::end() const noexcept {
  iterator it;
  it.owner_ = this;
  it.span_ = index_ == nullptr ? 0 : index_->span_count(record_);
  return it;
}

Names::iterator Names::begin() const {
  iterator it;
  it.owner_ = this;
  it.pos_ = index_->file.bytes().data() + index_->span_at(record_, 0).offset;
  find_next(it);
  return it;
}

std::size_t Names::size() const {
  // One cursor per span, not one per name as the iterator has: the names are counted, not read.
  const std::byte* const file = index_->file.bytes().data();
  std::size_t count = 0;
  for (std::size_t i = 0; i < index_->span_count(record_); ++i) {
    wire::Cursor cursor(file, index_->span_at(record_, i));
    while (cursor.next(number_)) count += cursor.field().is_len() ? 1 : 0;
  }
  return count;
}

std::vector<std::string_view> Names::to_vector() const {
  return {begin(), end()};
}

// The index validated these bytes at open, so the walk cannot fail on structure.
void Names::find_next(iterator& it) const {
  const std::byte* const file = index_->file.bytes().data();
  const std::size_t spans = index_->span_count(record_);
  while (it.span_ < spans) {
    const ByteRange span = index_->span_at(record_, it.span_);
    it.pos_ = detail::find_len_field(it.pos_, file + span.offset + span.length, number_, it.value_);
    if (it.pos_ != nullptr) return;
    ++it.span_;
    it.pos_ = it.span_ < spans ? file + index_->span_at(record_, it.span_).offset : nullptr;
  }
  it.pos_ = nullptr;
  it.value_ = {};
}
}  // namespace onnxmap
