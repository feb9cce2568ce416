#pragma once
// Checks before decoding, for front ends (onnxmap/front_end_scope.hpp). Inside a FrontEndScope,
// where the library starts decoding mapped bytes (the wire cursor, over every field of the
// indexing pass and of the views; the name look-ups; the strings and packed values the views
// hand out), it first touches one byte of every page of them in a guarded kernel
// (fault_guard.hpp): a page lost by a cut file is found there and becomes onnxmap::Error (io)
// naming the file, the byte and its size now, before any code that allocates or locks reads it.
// Outside a scope the check is one relaxed load of a process-wide count (and, while some thread
// is in a scope, a thread-local test). A cut between the check and the read (microseconds) meets
// the signal it would have met without onnxmap.

#include <atomic>
#include <cstddef>
#include <span>
#include <string_view>

namespace onnxmap::detail {

// How many FrontEndScope objects are alive on all threads together.
extern std::atomic<unsigned> front_end_scopes;
[[nodiscard]] bool this_thread_in_front_end_scope() noexcept;

// Whether this thread is inside a FrontEndScope.
[[nodiscard]] inline bool reading_for_front_end() noexcept {
  return front_end_scopes.load(std::memory_order_relaxed) != 0 && this_thread_in_front_end_scope();
}

// Touches one byte of every page of `bytes` in a guarded kernel; a fault is mapped_fault_error.
void check_pages(std::span<const std::byte> bytes);
// The same, noexcept: whether every page of [begin, end) could be read. False, without a touch,
// for more than 64 KiB (the caller then reads it field by field, checked).
[[nodiscard]] bool pages_readable(const std::byte* begin, const std::byte* end) noexcept;

// check_pages, inside a FrontEndScope only.
inline void check_for_front_end(std::span<const std::byte> bytes) {
  if (reading_for_front_end()) check_pages(bytes);
}
// The same over a string of the map (a name about to be compared or copied).
inline void check_for_front_end(std::string_view text) {
  if (reading_for_front_end())
    check_pages({reinterpret_cast<const std::byte*>(text.data()), text.size()});
}

// For a reader of [begin, end) that checks as it goes (wire::Cursor): where its unchecked bytes
// start; `begin` inside a FrontEndScope, else `end` (nothing to check).
[[nodiscard]] inline const std::byte* unchecked_from(const std::byte* begin,
                                                     const std::byte* end) noexcept {
  return reading_for_front_end() ? begin : end;
}
// Checks the bytes from `pos` to the end of the page after pos's (at least 4 KiB: a field's head
// and most names), within `end`, and returns the end of what it checked.
[[nodiscard]] const std::byte* check_ahead(const std::byte* pos, const std::byte* end);

}  // namespace onnxmap::detail
