#include "index/run_guess.hpp"

#include <cstddef>

#include "index/field_cursor.hpp"

namespace onnxmap::detail {

namespace {

using cursor_detail::take_varint;

// The field at `pos`, before `end`: its tag, where its value starts, and the position after it;
// nullptr when it is not well-formed there (a field number of 0, a reserved wire type, a value or
// length past `end`). Groups count as malformed: a guess can do without them.
const std::byte* step_field(const std::byte* pos, const std::byte* end, std::uint64_t& tag,
                            const std::byte*& value_start) {
  if (!take_varint(pos, end, tag) || (tag >> 3U) == 0) return nullptr;
  value_start = pos;
  const auto left = static_cast<std::uint64_t>(end - pos);
  std::uint64_t value = 0;
  switch (static_cast<wire::WireType>(tag & 7U)) {
    case wire::WireType::varint: return take_varint(pos, end, value) ? pos : nullptr;
    case wire::WireType::i64: return left >= 8 ? pos + 8 : nullptr;
    case wire::WireType::i32: return left >= 4 ? pos + 4 : nullptr;
    case wire::WireType::len:
      if (!take_varint(pos, end, value) || value > static_cast<std::uint64_t>(end - pos)) {
        return nullptr;
      }
      value_start = pos;
      return pos + value;
    default: return nullptr;
  }
}

// Whether [pos, end) is a sequence of well-formed fields, in at most `steps` of them (counted
// down: hostile bytes must not make a guess slower than stepping over the run exactly).
bool well_formed(const std::byte* pos, const std::byte* end, std::int64_t& steps) {
  std::uint64_t tag = 0;
  const std::byte* value = nullptr;
  while (pos != end) {
    if (--steps < 0) return false;
    pos = step_field(pos, end, tag, value);
    if (pos == nullptr) return false;
  }
  return true;
}

bool starts_run(const std::byte* pos, const std::byte* end, std::uint64_t message_fields,
                std::int64_t& steps) {
  for (int i = 0; i < kRunGuessChain && pos != end; ++i) {
    std::uint64_t tag = 0;
    const std::byte* payload = nullptr;
    const std::byte* const next = step_field(pos, end, tag, payload);
    const std::uint64_t number = tag >> 3U;
    if (next == nullptr || (tag & 7U) != static_cast<unsigned>(wire::WireType::len) ||
        number > 63 || ((message_fields >> number) & 1U) == 0 ||
        !well_formed(payload, next, steps)) {
      return false;
    }
    pos = next;
  }
  return true;
}

}  // namespace

const std::byte* guess_field_start(const std::byte* from, const std::byte* end,
                                   std::uint64_t message_fields) noexcept {
  const std::byte* const last =
      static_cast<std::uint64_t>(end - from) > kRunGuessWindow ? from + kRunGuessWindow : end;
  std::int64_t steps = kRunGuessSteps;
  for (const std::byte* pos = from; pos < last && steps > 0; ++pos) {
    if (starts_run(pos, end, message_fields, steps)) return pos;
  }
  return nullptr;
}

}  // namespace onnxmap::detail
