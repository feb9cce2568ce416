#pragma once
// The one field cursor: every reader of the wire format in onnxmap (the indexing pass, the views,
// the tensor fast path, the JSON dump, the writer and, for its field heads, the remote metadata
// walk) decodes fields here, after protozero's pbf_reader: next(), typed getters, views into the
// buffer, no allocation.
//
// Contract.
// - A Cursor walks the fields of one message held in memory, in wire order. Every byte it reads
//   lies inside that message; it never reads past its end.
// - It validates the framing of every field it passes, stepped over or not: a tag (field number
//   1..2^29-1, wire types 0-5), a varint of at most ten bytes, a fixed value or a length that
//   fits in what is left of the message. Groups (wire types 3 and 4, never written by ONNX) are
//   stepped over to their matching end tag, nested at most kGroupDepthLimit deep; a stray end tag
//   is an error. Anything else throws onnxmap::Error with the kind and the absolute offset of the
//   field's first bad byte.
// - It trusts nothing else and checks nothing about meaning: whether a wire type is the one the
//   schema expects, what a value means, whether a payload is itself well formed is the caller's.
//   The typed getters read the value as the wire type has it; ask type() first.
// - Inside a FrontEndScope (io/read_check.hpp) it checks the pages it is about to read first, so
//   that a page lost by a cut file is an onnxmap::Error (io) before any caller decodes it (a
//   caller that reads a payload itself asks check_payload()); outside one that costs a test of a
//   counter per cursor.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/span.hpp"
#include "io/read_check.hpp"
#include "wire/wire.hpp"

namespace onnxmap::wire {

inline constexpr int kGroupDepthLimit = 64;

// One field, as pointers into the message. No default member values: the cursor fills every
// member, and zeroing a field per step costs in the pass's inner loop.
struct Field {
  std::uint32_t number;
  WireType type;
  const std::byte* tag;      // where the field starts
  const std::byte* payload;  // LEN and group: the payload; otherwise where the value starts
  std::uint64_t value;       // LEN and group: the payload's length; otherwise the value bits

  [[nodiscard]] bool is_len() const noexcept { return type == WireType::len; }
  // The payload of a LEN field (a group's contents); empty for a scalar.
  [[nodiscard]] Bytes bytes() const noexcept {
    const bool has_bytes = type == WireType::len || type == WireType::start_group;
    return {payload, has_bytes ? static_cast<std::size_t>(value) : 0};
  }
  [[nodiscard]] std::string_view text() const noexcept { return as_string(bytes()); }
  [[nodiscard]] std::int64_t int64() const noexcept { return as_int64(value); }
  [[nodiscard]] std::int32_t int32() const noexcept { return as_int32(value); }
};

// What a field's head says: its tag, and for a varint its value, for a LEN field its length
// (not yet checked against anything); `tag_size` the bytes of the tag, `size` those of the tag
// and the value or length.
struct FieldHead {
  std::uint32_t number;
  WireType type;
  std::uint64_t value;
  std::size_t tag_size;
  std::size_t size;
};

// Reads the head of the field at `pos`, whose absolute offset is `offset`, from the bytes before
// `end`: the tag checked (number, wire type), then a varint value or a length. Throws
// onnxmap::Error (truncated, bad_varint, bad_field_number, bad_wire_type) at the byte at fault.
[[nodiscard]] FieldHead read_head(const std::byte* pos, const std::byte* end, std::uint64_t offset);

// The field at `pos` and the position after it, every form, checked as the contract says.
struct FieldAt {
  Field field;
  const std::byte* next;
};
[[nodiscard]] FieldAt read_field(const std::byte* pos, const std::byte* end, std::uint64_t offset);

namespace cursor_detail {

[[nodiscard]] inline unsigned byte_at(const std::byte* p) noexcept {
  return static_cast<std::uint8_t>(*p);
}

// A varint of at most two bytes at `p`, before `end`: its size, or 0 for anything else.
[[nodiscard]] inline int short_varint(const std::byte* p, const std::byte* end,
                                      std::uint64_t& value) noexcept {
  const std::ptrdiff_t left = end - p;
  if (left < 1) return 0;
  const unsigned first = byte_at(p);
  if (first < 0x80U) {
    value = first;
    return 1;
  }
  if (left < 2) return 0;
  const unsigned second = byte_at(p + 1);
  if (second >= 0x80U) return 0;
  value = (first & 0x7FU) | (second << 7U);
  return 2;
}

// The field at `pos` when it has the common form (a tag of one or two bytes with a field number
// of 1 or more, then a varint or a length of one or two bytes, the length within the message):
// the position after it, or nullptr for any other form, which read_field then decodes.
[[nodiscard]] inline const std::byte* read_common(const std::byte* pos, const std::byte* end,
                                                  Field& field) noexcept {
  // The most common form by far, first: one-byte tag, one-byte value or length.
  if (end - pos >= 2) {
    const unsigned tag = byte_at(pos);
    const unsigned second = byte_at(pos + 1);
    if (((tag | second) & 0x80U) == 0 && tag >= 8) {
      const auto type = static_cast<WireType>(tag & 7U);
      if (type == WireType::varint) {
        field = {tag >> 3U, type, pos, pos + 1, second};
        return pos + 2;
      }
      if (type == WireType::len && second <= static_cast<std::size_t>(end - pos - 2)) {
        field = {tag >> 3U, type, pos, pos + 2, second};
        return pos + 2 + second;
      }
      return nullptr;
    }
  }
  std::uint64_t tag = 0;
  std::uint64_t value = 0;
  const int tag_size = short_varint(pos, end, tag);
  const auto type = static_cast<WireType>(tag & 7U);
  if (tag_size == 0 || tag < 8 || (type != WireType::len && type != WireType::varint)) {
    return nullptr;
  }
  const std::byte* at = pos + tag_size;
  const int value_size = short_varint(at, end, value);
  if (value_size == 0) return nullptr;
  const std::byte* after = at + value_size;
  const auto number = static_cast<std::uint32_t>(tag >> 3U);
  if (type == WireType::varint) {
    field = {number, type, pos, at, value};
    return after;
  }
  if (value > static_cast<std::uint64_t>(end - after)) return nullptr;
  field = {number, type, pos, after, value};
  return after + value;
}

// A LEN field with a one-byte tag and a one-byte length within the message at `pos`: the
// position after it, or nullptr. `number` receives its field number.
[[nodiscard]] inline const std::byte* short_len(const std::byte* pos, const std::byte* end,
                                                unsigned& number) noexcept {
  if (end - pos < 2) return nullptr;
  const unsigned tag = byte_at(pos);
  const unsigned length = byte_at(pos + 1);
  // (tag & 0x87) == 2: below 0x80 and wire type LEN; tag >= 8: a field number of 1 or more.
  if ((tag & 0x87U) != 0x02U || tag < 8 || length >= 0x80U ||
      length > static_cast<std::size_t>(end - pos - 2)) {
    return nullptr;
  }
  number = tag >> 3U;
  return pos + 2 + length;
}

}  // namespace cursor_detail

class Cursor {
 public:
  // The message `bytes`, whose first byte is at absolute offset `base` (errors and offset()
  // report absolute offsets).
  explicit Cursor(Bytes bytes, std::uint64_t base = 0) noexcept
      : begin_(bytes.data()),
        pos_(begin_),
        end_(begin_ + bytes.size()),
        stop_(detail::unchecked_from(begin_, end_)),
        base_(base) {}
  // The message at `span` of the buffer that starts at `origin` (a whole mapped file).
  Cursor(const std::byte* origin, ByteRange span) noexcept
      : begin_(origin + span.offset),
        pos_(begin_),
        end_(begin_ + span.length),
        stop_(detail::unchecked_from(begin_, end_)),
        base_(span.offset) {}

  // Moves to the next field; false at the message's end.
  [[nodiscard]] bool next() {
    if (pos_ >= stop_) [[unlikely]] {
      if (pos_ == end_) return false;
      stop_ = detail::check_ahead(pos_, end_);
    }
    take_any();
    return true;
  }
  // Moves to the next field numbered `number`, stepping over the others; false at the end.
  [[nodiscard]] bool next(std::uint32_t number) {
    // Most fields a view looks through are short strings: taken or stepped over without a Field.
    const std::byte* pos = pos_;
    for (;; stop_ = detail::check_ahead(pos, end_)) {
      while (pos < stop_) {
        unsigned short_number = 0;
        if (const std::byte* after = cursor_detail::short_len(pos, end_, short_number)) {
          if (short_number == number) {
            field_ = {number, WireType::len, pos, pos + 2,
                      static_cast<std::uint64_t>(after - pos - 2)};
            pos_ = after;
            return true;
          }
          pos = after;
          continue;
        }
        pos = take_at(pos, field_);
        if (field_.number == number) {
          pos_ = pos;
          return true;
        }
      }
      if (pos == end_) break;  // else past the checked bytes of a FrontEndScope: check on
    }
    pos_ = pos;
    return false;
  }
  // Moves to the next field that `wanted(number, type)` accepts, stepping over the others; a
  // short LEN field `wanted` refuses is stepped over without being decoded. The indexing pass's
  // field loop: its state stays in locals, so that it stays in registers for the many fields
  // only stepped over.
  template <class Wanted>
  [[nodiscard]] bool next_wanted(Wanted&& wanted) {
    const std::byte* pos = pos_;
    for (;; stop_ = detail::check_ahead(pos, end_)) {
      while (pos < stop_) {
        unsigned number = 0;
        if (const std::byte* after = cursor_detail::short_len(pos, end_, number)) {
          if (!wanted(number, WireType::len)) {
            pos = after;
            continue;
          }
        }
        Field field;
        pos = take_at(pos, field);
        if (wanted(field.number, field.type)) {
          field_ = field;
          pos_ = pos;
          return true;
        }
      }
      if (pos == end_) break;  // else past the checked bytes of a FrontEndScope: check on
    }
    pos_ = pos;
    return false;
  }
  // Steps over the rest of the message when every field has the common form (read_common) and
  // none is a LEN field whose number has its bit set in `mask` (a number past 63 counts as set):
  // true then. False, having moved nothing, for anything else, malformed bytes included: it
  // never throws, so that the pass can try it early and leave errors to the walk that reports
  // them with the message's own path.
  [[nodiscard]] bool step_plain(std::uint64_t mask) noexcept {
    // Numbers 1 to 15 have one-byte tags; a run of short LEN fields among them whose bits are
    // clear is the cheapest loop of the pass per field: a plain node is one such run.
    const std::uint32_t skip = ~static_cast<std::uint32_t>(mask) & 0xFFFEU;
    // In a front-end scope, only a message whose pages are all readable (the walk that throws
    // reports one that is not).
    if (stop_ < end_ && !detail::pages_readable(pos_, end_)) return false;
    const std::byte* pos = pos_;
    while (true) {
      pos = skip_short_run(pos, skip);
      if (pos == end_) {
        pos_ = pos;
        return true;
      }
      Field field;
      const std::byte* next = cursor_detail::read_common(pos, end_, field);
      if (next == nullptr) return false;
      const bool marked = field.number > 63 || ((mask >> field.number) & 1U) != 0;
      if (field.type == WireType::len && marked) return false;
      pos = next;
    }
  }

  // The field next() moved to.
  [[nodiscard]] const Field& field() const noexcept { return field_; }
  // For a caller about to read the current field's payload (a name, a string): inside a
  // FrontEndScope, checks it where it runs past the bytes the cursor checked (read_check.hpp).
  // Outside a scope stop_ is end_, which holds every payload: a comparison, no load.
  void check_payload() const {
    const Bytes payload = field_.bytes();
    if (payload.data() + payload.size() > stop_) [[unlikely]]
      detail::check_pages(payload);
  }
  // The absolute offset of a byte of the message (a Field's tag or payload).
  [[nodiscard]] std::uint64_t offset(const std::byte* at) const noexcept {
    return base_ + static_cast<std::uint64_t>(at - begin_);
  }
  [[nodiscard]] std::uint64_t tag_offset() const noexcept { return offset(field_.tag); }
  // The current field's payload as an absolute span (empty where a scalar starts).
  [[nodiscard]] ByteRange payload_span() const noexcept {
    return {offset(field_.payload), field_.bytes().size()};
  }
  // The absolute offset of the first byte not yet read.
  [[nodiscard]] std::uint64_t position() const noexcept { return offset(pos_); }

 private:
  // Steps over the run of short LEN fields at `pos` whose field number has its bit set in `skip`.
  // The tag and length bytes are tested as one 16-bit word, the number's range not at all.
  [[nodiscard]] const std::byte* skip_short_run(const std::byte* pos,
                                                std::uint32_t skip) const noexcept {
    while (end_ - pos >= 2) {
      const unsigned pair = cursor_detail::byte_at(pos) | (cursor_detail::byte_at(pos + 1) << 8U);
      // Wire type LEN with bit 7 clear in both bytes; then the number (tag >> 3 is below 16).
      if ((pair & 0x8087U) != 0x0002U) break;
      const unsigned length = pair >> 8U;
      if (((skip >> ((pair & 0xFFU) >> 3U)) & 1U) == 0 ||
          length > static_cast<std::size_t>(end_ - pos - 2)) {
        break;
      }
      pos += 2 + length;
    }
    return pos;
  }

  // Reads the field at `pos` into `field`; returns the position after it.
  [[nodiscard]] const std::byte* take_at(const std::byte* pos, Field& field) const {
    if (const std::byte* after = cursor_detail::read_common(pos, end_, field)) return after;
    const FieldAt general = read_field(pos, end_, offset(pos));
    field = general.field;
    return general.next;
  }
  void take_any() { pos_ = take_at(pos_, field_); }

  const std::byte* begin_;
  const std::byte* pos_;
  const std::byte* end_;
  // The loops' bound: end_, or inside a FrontEndScope the end of the bytes checked so far
  // (read_check.hpp), where a loop stops to check more. Outside a scope the loops cost what they
  // would without the checks.
  const std::byte* stop_;
  std::uint64_t base_;
  Field field_{};
};

// --- Repeated scalars, packed or not -------------------------------------------------------------
// A repeated scalar may arrive packed (one LEN field) or unpacked (one field per element), and a
// reader must accept both. Each helper calls `fn` for every element `field` carries and returns
// false when the wire type fits neither form (libprotobuf then treats the field as unknown).
// `payload_offset` is the absolute offset of the field's payload, for errors: a varint cut short
// or a trailing partial fixed value throws onnxmap::Error there.

// Calls fn(value) for each varint of a packed list.
template <class Fn>
void for_each_packed_varint(Bytes payload, std::uint64_t payload_offset, Fn&& fn) {
  const std::byte* pos = payload.data();
  const std::byte* const end = pos + payload.size();
  while (pos != end) {
    if (cursor_detail::byte_at(pos) < 0x80U) {  // one byte: most dims and types
      fn(std::uint64_t{cursor_detail::byte_at(pos++)});
      continue;
    }
    std::size_t at = static_cast<std::size_t>(pos - payload.data());
    fn(read_varint(payload, at, payload_offset));
    pos = payload.data() + at;
  }
}

template <class Fn>
bool for_each_varint(const Field& field, std::uint64_t payload_offset, Fn&& fn) {
  if (field.type == WireType::varint) {
    fn(field.value);
    return true;
  }
  if (field.type != WireType::len) return false;
  for_each_packed_varint(field.bytes(), payload_offset, fn);
  return true;
}

// Fixed-width elements (`Int`: std::uint32_t for I32, std::uint64_t for I64).
template <class Int, class Fn>
bool for_each_fixed(const Field& field, std::uint64_t payload_offset, Fn&& fn) {
  constexpr bool kWide = sizeof(Int) == 8;
  if (field.type == (kWide ? WireType::i64 : WireType::i32)) {
    fn(static_cast<Int>(field.value));
    return true;
  }
  if (field.type != WireType::len) return false;
  const Bytes bytes = field.bytes();
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    fn(static_cast<Int>(kWide ? read_fixed64(bytes, pos, payload_offset)
                              : read_fixed32(bytes, pos, payload_offset)));
  }
  return true;
}

template <class Fn>
bool for_each_fixed32(const Field& field, std::uint64_t payload_offset, Fn&& fn) {
  return for_each_fixed<std::uint32_t>(field, payload_offset, fn);
}

template <class Fn>
bool for_each_fixed64(const Field& field, std::uint64_t payload_offset, Fn&& fn) {
  return for_each_fixed<std::uint64_t>(field, payload_offset, fn);
}

}  // namespace onnxmap::wire
