#pragma once
// The indexing pass's field walker. It reads the same wire format with the same checks as
// wire::Reader, but is built for the pass's inner loop: the position lives in a local (so it
// stays in a register), the common encodings (tags and lengths or varints of one or two bytes)
// are decoded inline, and anything else, every error included, is handed to wire::Reader from the
// field's tag, so errors and their offsets are wire::Reader's own.

#include <cstddef>
#include <cstdint>

#include "onnxmap/detail/span.hpp"
#include "wire/wire.hpp"

namespace onnxmap::detail {

// No default member values: the walk fills every member, and a zeroed field per iteration costs.
struct CursorField {
  std::uint32_t number;
  wire::WireType type;
  const std::byte* tag;      // where the field starts
  const std::byte* payload;  // len: the payload; otherwise where the value starts
  std::uint64_t value;       // len and group: the payload's length; else the value bits

  [[nodiscard]] wire::Bytes bytes() const noexcept {
    return {payload, static_cast<std::size_t>(value)};
  }
  // A payload span: the bytes of a LEN (or group) field, an empty span where a scalar starts.
  [[nodiscard]] Span payload_span(const std::byte* file) const noexcept {
    const bool has_bytes = type == wire::WireType::len || type == wire::WireType::start_group;
    return {static_cast<std::uint64_t>(payload - file), has_bytes ? value : 0};
  }
  [[nodiscard]] std::uint64_t tag_offset(const std::byte* file) const noexcept {
    return static_cast<std::uint64_t>(tag - file);
  }
};

// The field at `pos` read by wire::Reader (which throws onnxmap::Error on bad input), and the
// position after it. Returned by value so that the caller's field stays in registers.
struct GeneralField {
  CursorField field;
  const std::byte* next;
};
[[nodiscard]] GeneralField read_field_general(const std::byte* file, const std::byte* pos,
                                              const std::byte* end);

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

// A varint of at most nine bytes (63 bits) at `p`, before `end`, `p` moved past it; false for
// anything else (ten-byte varints and errors are wire::read_varint's).
[[nodiscard]] inline bool take_varint(const std::byte*& p, const std::byte* end,
                                      std::uint64_t& value) noexcept {
  if (p != end && byte_at(p) < 0x80U) {  // one byte: most dims, types and lengths
    value = byte_at(p++);
    return true;
  }
  value = 0;
  const std::byte* at = p;
  for (unsigned shift = 0; shift < 63 && at != end; shift += 7) {
    const unsigned byte = byte_at(at++);
    value |= static_cast<std::uint64_t>(byte & 0x7FU) << shift;
    if (byte < 0x80U) {
      p = at;
      return true;
    }
  }
  return false;
}

// Decodes the field at `pos` (before `end`) when it has the common form: a tag of one or two
// bytes with a field number of at least 1, then a varint or a length of one or two bytes, the
// length within the message. Returns the position after the field, or nullptr for any other form.
[[nodiscard]] inline const std::byte* decode_common_field(const std::byte* pos,
                                                          const std::byte* end,
                                                          CursorField& field) noexcept {
  // The most common form by far, first: one-byte tag, one-byte value or length.
  if (end - pos >= 2) {
    const unsigned tag = byte_at(pos);
    const unsigned second = byte_at(pos + 1);
    if (((tag | second) & 0x80U) == 0 && tag >= 8) {
      const auto type = static_cast<wire::WireType>(tag & 7U);
      if (type == wire::WireType::varint) {
        field = {tag >> 3U, type, pos, pos + 1, second};
        return pos + 2;
      }
      if (type == wire::WireType::len && second <= static_cast<std::size_t>(end - pos - 2)) {
        field = {tag >> 3U, type, pos, pos + 2, second};
        return pos + 2 + second;
      }
      return nullptr;
    }
  }
  std::uint64_t tag = 0;
  std::uint64_t value = 0;
  const int tag_size = short_varint(pos, end, tag);
  const auto type = static_cast<wire::WireType>(tag & 7U);
  if (tag_size == 0 || tag < 8 || (type != wire::WireType::len && type != wire::WireType::varint)) {
    return nullptr;
  }
  const std::byte* at = pos + tag_size;
  const int value_size = short_varint(at, end, value);
  if (value_size == 0) return nullptr;
  const std::byte* after = at + value_size;
  const auto number = static_cast<std::uint32_t>(tag >> 3U);
  if (type == wire::WireType::varint) {
    field = {number, type, pos, at, value};
    return after;
  }
  if (value > static_cast<std::uint64_t>(end - after)) return nullptr;
  field = {number, type, pos, after, value};
  return after + value;
}

// The commonest field of all, decided in a few instructions: a LEN field with a one-byte tag
// whose bit in `mask` is clear (a string a walk only steps over) and a one-byte length within
// the message. Returns the position after it, or nullptr for anything else.
[[nodiscard]] inline const std::byte* skip_short_len(const std::byte* pos, const std::byte* end,
                                                     std::uint64_t mask) noexcept {
  if (end - pos < 2) return nullptr;
  const unsigned tag = byte_at(pos);
  const unsigned length = byte_at(pos + 1);
  // (tag & 0x87) == 2: below 0x80 and wire type LEN; tag >= 8: a field number of 1 or more.
  if ((tag & 0x87U) != 0x02U || tag < 8 || length >= 0x80U || ((mask >> (tag >> 3U)) & 1U) != 0) {
    return nullptr;
  }
  if (length > static_cast<std::size_t>(end - pos - 2)) return nullptr;
  return pos + 2 + length;
}

// Steps over the run of short LEN fields at `pos` (a one-byte tag and a one-byte length within
// the message) whose field number has its bit set in `skip` (numbers 1 to 15 have one-byte
// tags): a plain node is one such run. Returns where the run ends. The tag and length bytes are
// tested as one 16-bit word, and the number's range not at all, which make it the cheapest loop
// of the pass per field.
[[nodiscard]] inline const std::byte* skip_short_run(const std::byte* pos, const std::byte* end,
                                                     std::uint32_t skip) noexcept {
  while (end - pos >= 2) {
    const unsigned pair = byte_at(pos) | (byte_at(pos + 1) << 8U);  // one load on most targets
    // Wire type LEN with bit 7 clear in both bytes; then the number (tag >> 3 is below 16).
    if ((pair & 0x8087U) != 0x0002U) break;
    const unsigned length = pair >> 8U;
    if (((skip >> ((pair & 0xFFU) >> 3U)) & 1U) == 0 ||
        length > static_cast<std::size_t>(end - pos - 2)) {
      break;
    }
    pos += 2 + length;
  }
  return pos;
}

// skip_short_run's `skip` for a walk that selects the field numbers in `mask`: the others, from 1.
[[nodiscard]] constexpr std::uint32_t short_run_numbers(std::uint64_t mask) noexcept {
  return ~static_cast<std::uint32_t>(mask) & 0xFFFEU;
}

}  // namespace cursor_detail

// Calls fn(value) for each varint of the packed list at `span` (a LEN field's payload). A varint
// this loop does not decode is read by wire::read_varint, so errors and offsets are its own.
template <class Fn>
void for_each_varint(const std::byte* file, Span span, Fn&& fn) {
  const std::byte* pos = file + span.offset;
  const std::byte* const end = pos + span.length;
  while (pos != end) {
    std::uint64_t value = 0;
    if (!cursor_detail::take_varint(pos, end, value)) {
      const auto base = static_cast<std::uint64_t>(pos - file);
      std::size_t at = 0;
      value = wire::read_varint(wire::Bytes(pos, static_cast<std::size_t>(end - pos)), at, base);
      pos += at;
    }
    fn(value);
  }
}

// LEN fields at least this long are passed to for_each_message_field's callback whatever their
// number, so that the pass can unmap payloads it stepped over (index/payload_trim.hpp).
inline constexpr std::uint64_t kLargeFieldLength = std::uint64_t{64} << 10U;

// Whether for_each_message_field calls back for `field`: a field whose number has its bit set in
// `mask` (numbers past 63 always count), of wire type LEN unless `every_type`.
[[nodiscard]] inline bool is_wanted(const CursorField& field, std::uint64_t mask,
                                    bool every_type = false) noexcept {
  return (every_type || field.type == wire::WireType::len) &&
         (field.number > 63 || ((mask >> field.number) & 1U) != 0);
}

// The field loop of the indexing pass: walks every field of the message at `span` of the file
// starting at `file`, and calls fn(field) for the fields is_wanted(field, mask, every_type)
// selects and for LEN fields of kLargeFieldLength bytes or more. The rest are only stepped over.
template <class Fn>
void for_each_message_field(const std::byte* file, Span span, std::uint64_t mask, bool every_type,
                            Fn&& fn) {
  const std::byte* pos = file + span.offset;
  const std::byte* const end = pos + span.length;
  while (pos != end) {
    if (const std::byte* next = cursor_detail::skip_short_len(pos, end, mask)) {
      pos = next;
      continue;
    }
    CursorField field;
    if (const std::byte* next = cursor_detail::decode_common_field(pos, end, field)) {
      if (is_wanted(field, mask, every_type)) {
        // A copy for the call: `field` itself never has its address taken, so it stays in
        // registers for the many fields that are only stepped over.
        const CursorField passed = field;
        fn(passed);
      }
      pos = next;
    } else {
      // Lengths of kLargeFieldLength take three bytes or more: always this path.
      const GeneralField general = read_field_general(file, pos, end);
      const bool large =
          general.field.type == wire::WireType::len && general.field.value >= kLargeFieldLength;
      if (large || is_wanted(general.field, mask, every_type)) fn(general.field);
      pos = general.next;
    }
  }
}
template <class Fn>
void for_each_message_field(const std::byte* file, Span span, std::uint64_t mask, Fn&& fn) {
  for_each_message_field(file, span, mask, false, fn);
}

// Calls fn(field) for every field of the message at `span`.
template <class Fn>
void for_each_field(const std::byte* file, Span span, Fn&& fn) {
  for_each_message_field(file, span, ~std::uint64_t{0}, true, fn);
}

// Steps over whole fields from `pos` until at least `bytes` bytes are passed or `end` is reached,
// counting them in `fields`; returns the position reached, and calls on_long(field, next) for
// each field that is not a short one (a one-byte tag and length), so that the caller can trim
// the payload pages its read may have mapped. Malformed bytes throw onnxmap::Error
// (wire::Reader's). Its own function, so that the position stays in a register: cutting a graph
// of 540 000 fields into runs steps over every one of them on one thread.
template <class OnLong>
[[nodiscard]] const std::byte* step_fields(const std::byte* file, const std::byte* pos,
                                           const std::byte* end, std::uint64_t bytes,
                                           std::uint64_t& fields, OnLong&& on_long) {
  const std::byte* const stop = static_cast<std::uint64_t>(end - pos) > bytes ? pos + bytes : end;
  std::uint64_t count = 0;
  while (pos < stop) {
    ++count;
    // Most fields of a graph are short nodes: one-byte tag and length.
    if (const std::byte* next = cursor_detail::skip_short_len(pos, end, 0)) {
      pos = next;
      continue;
    }
    CursorField field;
    const std::byte* next = cursor_detail::decode_common_field(pos, end, field);
    if (next == nullptr) next = read_field_general(file, pos, end).next;
    on_long(pos, next);
    pos = next;
  }
  fields += count;
  return pos;
}

// Steps over the message at `span` when for_each_message_field(file, span, mask, fn) would never
// call fn and every field has the common form: returns true then. Returns false, having decided
// nothing, for anything else, malformed bytes included: it never throws, so that the pass can
// try it early and leave errors to the walk that reports them with the message's own path.
[[nodiscard]] inline bool step_plain_message(const std::byte* file, Span span,
                                             std::uint64_t mask) noexcept {
  const std::byte* pos = file + span.offset;
  const std::byte* const end = pos + span.length;
  const std::uint32_t skip = cursor_detail::short_run_numbers(mask);
  while (true) {
    pos = cursor_detail::skip_short_run(pos, end, skip);
    if (pos == end) return true;
    CursorField field;
    const std::byte* next = cursor_detail::decode_common_field(pos, end, field);
    if (next == nullptr || is_wanted(field, mask)) return false;
    pos = next;
  }
}

}  // namespace onnxmap::detail
