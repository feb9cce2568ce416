#pragma once
// The mapped files of onnxmap, as the fault guard (fault_guard.cpp) needs them: which file a
// fault lies in, how long that file is now, and mapping it again under stand-in pages. Filled by
// register_mapping and unregister_mapping (fault_guard.hpp), which MappedFile calls.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>

#include "onnxmap/error.hpp"

namespace onnxmap::detail {

// [begin, end) of the mapped file holding `address`, or {0, 0}. Async-signal-safe: a table of
// atomics, no lock (a process with more than 4096 maps at once finds only the first 4096).
[[nodiscard]] std::pair<std::uintptr_t, std::uintptr_t> map_of(std::uintptr_t address) noexcept;

// The first byte of `bytes` past the end its mapped file has now, or 0 (none, or in no mapped
// file of onnxmap).
[[nodiscard]] std::uintptr_t first_lost_byte(std::span<const std::byte> bytes);
// The first byte of any mapped file past the end its file has now, or 0.
[[nodiscard]] std::uintptr_t first_lost_byte_of_any_map();

// Maps the file again under the pages [begin, end) that a stand-in guard put zeros in, so that
// the next read there faults (and is seen) again; where that fails, leaves them unreadable rather
// than zeros. A map no longer registered was unmapped, the zeros with it: its addresses may
// belong to another map now, and are left alone.
void map_file_again(std::uintptr_t begin, std::uintptr_t end);

// Runs `work` with the registry locked (what note_unmapped_faults writes is read under it).
void with_registry_locked(const std::function<void()>& work);

// Defined by fault_guard.cpp; called with the registry locked, before the map [begin,
// begin+size) goes: this thread's stand-in guards whose fault lies in it keep error_at(offset)
// now, while the file can still be examined.
void note_unmapped_faults(std::uintptr_t begin, std::size_t size,
                          const std::function<Error(std::uint64_t)>& error_at) noexcept;

}  // namespace onnxmap::detail
