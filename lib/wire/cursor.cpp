#include "wire/cursor.hpp"

#include <string>
#include <vector>

namespace onnxmap::wire {

namespace {

// The absolute offset of `at`, a byte of the message whose byte `pos` is at `pos_offset`.
std::uint64_t offset_of(const std::byte* at, const std::byte* pos, std::uint64_t pos_offset) {
  return pos_offset + static_cast<std::uint64_t>(at - pos);
}

// Advances `at` past a fixed value of `type` (nothing for the other types), checked against
// `end`.
void skip_fixed(WireType type, const std::byte*& at, const std::byte* end,
                std::uint64_t at_offset) {
  const Bytes rest(at, static_cast<std::size_t>(end - at));
  std::size_t used = 0;
  if (type == WireType::i64) (void)read_fixed64(rest, used, at_offset);
  if (type == WireType::i32) (void)read_fixed32(rest, used, at_offset);
  at += used;
}

// The end of a LEN field's payload of `length` bytes from `after_head`, checked against `end`;
// `length_offset` is where the length was written.
const std::byte* check_length(std::uint64_t length, const std::byte* after_head,
                              const std::byte* end, std::uint64_t length_offset) {
  const auto left = static_cast<std::uint64_t>(end - after_head);
  if (length > left) {
    throw Error(ErrorKind::out_of_bounds,
                "length " + std::to_string(length) + " runs past the end of its message (" +
                    std::to_string(left) + " bytes left)",
                length_offset);
  }
  return after_head + length;
}

// Steps over the rest of a group opened by field `number`, its contents starting at `at`;
// returns where its end tag ends, and where that tag starts in `contents_end`. Iterative, with a
// stack of open group numbers, so that nesting costs no native stack.
const std::byte* skip_group(std::uint32_t number, const std::byte* at, const std::byte* end,
                            std::uint64_t at_offset, const std::byte*& contents_end) {
  const std::byte* const contents = at;
  std::vector<std::uint32_t> open{number};
  while (true) {
    if (at == end) {
      throw Error(ErrorKind::truncated,
                  "group " + std::to_string(open.back()) + " has no end-group tag", at_offset);
    }
    const std::uint64_t tag_offset = offset_of(at, contents, at_offset);
    const FieldHead head = read_head(at, end, tag_offset);
    if (head.type == WireType::end_group) {
      if (head.number != open.back()) {
        throw Error(ErrorKind::bad_wire_type,
                    "end-group tag " + std::to_string(head.number) + " closes group " +
                        std::to_string(open.back()),
                    tag_offset);
      }
      contents_end = at;
      at += head.size;
      open.pop_back();
      if (open.empty()) return at;
      continue;
    }
    if (head.type == WireType::start_group) {
      if (static_cast<int>(open.size()) >= kGroupDepthLimit) {
        throw Error(ErrorKind::depth_limit,
                    "groups nested deeper than " + std::to_string(kGroupDepthLimit), tag_offset);
      }
      open.push_back(head.number);
      at += head.size;
      continue;
    }
    // read_head read a varint's value and a length already.
    const std::byte* value = at + head.size;
    if (head.type == WireType::len) {
      at = check_length(head.value, value, end, tag_offset + head.tag_size);
    } else {
      at = value;
      skip_fixed(head.type, at, end, tag_offset + head.size);
    }
  }
}

}  // namespace

FieldHead read_head(const std::byte* pos, const std::byte* end, std::uint64_t offset) {
  const Bytes bytes(pos, static_cast<std::size_t>(end - pos));
  std::size_t used = 0;
  const std::uint64_t tag = read_varint(bytes, used, offset);
  const std::uint64_t wire = tag & 7U;
  const std::uint64_t number = tag >> 3U;
  if (number == 0 || number > kMaxFieldNumber) {
    throw Error(ErrorKind::bad_field_number,
                "field number " + std::to_string(number) + " outside 1..536870911", offset);
  }
  if (wire == 6 || wire == 7) {
    throw Error(ErrorKind::bad_wire_type, "wire type " + std::to_string(wire) + " does not exist",
                offset);
  }
  FieldHead head{static_cast<std::uint32_t>(number), static_cast<WireType>(wire), 0, used, used};
  if (head.type == WireType::varint || head.type == WireType::len) {
    head.value = read_varint(bytes, used, offset);
    head.size = used;
  }
  return head;
}

FieldAt read_field(const std::byte* pos, const std::byte* end, std::uint64_t offset) {
  const FieldHead head = read_head(pos, end, offset);
  const std::byte* const after_head = pos + head.size;
  Field field{head.number, head.type, pos, after_head, head.value};
  switch (head.type) {
    case WireType::varint: return {field, after_head};
    case WireType::len: {
      return {field, check_length(head.value, after_head, end, offset + head.tag_size)};
    }
    case WireType::i64:
    case WireType::i32: {
      Bytes rest(after_head, static_cast<std::size_t>(end - after_head));
      std::size_t used = 0;
      field.value = head.type == WireType::i64 ? read_fixed64(rest, used, offset + head.size)
                                               : read_fixed32(rest, used, offset + head.size);
      return {field, after_head + used};
    }
    case WireType::start_group: {
      // The group's contents, up to its end tag, are its payload.
      const std::byte* contents_end = after_head;
      const std::byte* next =
          skip_group(head.number, after_head, end, offset + head.size, contents_end);
      field.value = static_cast<std::uint64_t>(contents_end - after_head);
      return {field, next};
    }
    case WireType::end_group: break;
  }
  throw Error(ErrorKind::bad_wire_type,
              "end-group tag " + std::to_string(head.number) + " with no open group", offset);
}

}  // namespace onnxmap::wire
