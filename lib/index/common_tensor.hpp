#pragma once
// A fast path of the indexing pass for the tensor layout nearly every file has: what libprotobuf
// (onnx.save, torch.onnx.export) and onnxmap write for a tensor with raw_data. Fields in number
// order, one-byte tags: dims (1) as one varint each, data_type (2), name (8), raw_data (9), each
// at most once, nothing else. Metadata-heavy models hold hundreds of thousands of such tensors;
// the general walk (a callback per field, leaf validation, every data field) cost several times
// more per tensor. Anything else, malformed bytes included, is left to the general walk, which
// then reads the tensor from the start, so errors stay the general walk's own.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "index/pod_table.hpp"
#include "onnxmap/detail/message_view.hpp"
#include "onnxmap/wire.hpp"

namespace onnxmap::detail {

struct CommonTensor {
  std::int32_t data_type = 0;
  std::string_view name;
  std::optional<Span> raw;
  std::uint64_t raw_tag = 0;  // where raw_data's tag is
};

namespace common_tensor_detail {

// A varint of at most nine bytes (63 bits: no negative dims, no edge cases) before `end`.
[[nodiscard]] inline bool take_varint(const std::byte*& p, const std::byte* end,
                                      std::uint64_t& value) noexcept {
  value = 0;
  for (unsigned shift = 0; shift < 63 && p != end; shift += 7) {
    const auto byte = static_cast<std::uint8_t>(*p++);
    value |= static_cast<std::uint64_t>(byte & 0x7FU) << shift;
    if (byte < 0x80U) return true;
  }
  return false;
}

// A LEN field's payload after its tag at `p`: its span, `p` moved past it.
[[nodiscard]] inline bool take_len(const std::byte* file, const std::byte*& p, const std::byte* end,
                                   Span& payload) noexcept {
  std::uint64_t length = 0;
  if (!take_varint(p, end, length) || length > static_cast<std::uint64_t>(end - p)) return false;
  payload = {static_cast<std::uint64_t>(p - file), length};
  p += length;
  return true;
}

}  // namespace common_tensor_detail

// Reads the tensor at `span` when it has the common layout and everything before its raw_data
// payload lies on the page where it starts (which scanning its parent touched: the pass's
// unmapping of payloads counts on that). Appends its dims to `dims`. Returns false, with `dims`
// as it was, for anything else.
[[nodiscard]] inline bool read_common_tensor(const std::byte* file, Span span,
                                             std::uint64_t page_size, PodTable<std::int64_t>& dims,
                                             CommonTensor& out) {
  using common_tensor_detail::take_len;
  using common_tensor_detail::take_varint;
  constexpr std::uint8_t kDimsTag = 0x08;      // field 1, varint
  constexpr std::uint8_t kDataTypeTag = 0x10;  // field 2, varint
  constexpr std::uint8_t kNameTag = 0x42;      // field 8, LEN
  constexpr std::uint8_t kRawDataTag = 0x4A;   // field 9, LEN
  const std::byte* p = file + span.offset;
  const std::byte* const end = p + span.length;
  const std::uint64_t first_page = span.offset & ~(page_size - 1);
  const std::size_t dims_before = dims.size();
  const auto tag_is = [&](std::uint8_t tag) {
    return p != end && static_cast<std::uint8_t>(*p) == tag;
  };
  const auto fail = [&] {
    dims.truncate(dims_before);
    return false;
  };
  std::uint64_t value = 0;
  while (tag_is(kDimsTag)) {
    ++p;
    if (!take_varint(p, end, value)) return fail();
    dims.push_back(static_cast<std::int64_t>(value));
  }
  if (tag_is(kDataTypeTag)) {
    ++p;
    if (!take_varint(p, end, value)) return fail();
    out.data_type = wire::as_int32(value);
  }
  Span payload;
  if (tag_is(kNameTag)) {
    ++p;
    if (!take_len(file, p, end, payload)) return fail();
    out.name = {reinterpret_cast<const char*>(file + payload.offset), payload.length};
  }
  // Where the bytes the walk reads end: raw_data's payload is only stepped over.
  std::uint64_t read_end = static_cast<std::uint64_t>(p - file);
  if (tag_is(kRawDataTag)) {
    out.raw_tag = static_cast<std::uint64_t>(p - file);
    ++p;
    if (!take_len(file, p, end, payload)) return fail();
    out.raw = payload;
    read_end = payload.offset;
  }
  if (p != end || read_end - first_page > page_size) return fail();
  return true;
}

}  // namespace onnxmap::detail
