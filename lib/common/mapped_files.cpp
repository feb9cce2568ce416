// The registry of onnxmap's mapped files (mapped_files.hpp): a table the SIGBUS handler reads
// without a lock, a map under a mutex for the rest, and what a fault's error says of its file.

#include "common/mapped_files.hpp"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/fault_guard.hpp"

namespace onnxmap::detail {

namespace {

// The mapped files as the handler sees them (the registry below takes a lock): [begin, end) of
// each, in slots claimed by compare-and-swap. A map that finds no slot is not stood in for.
struct MapSlot {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};  // 0 while the slot is being filled or emptied
};
constexpr std::size_t kMapSlots = 4096;
MapSlot map_slots[kMapSlots];  // NOLINT(modernize-avoid-c-arrays): read in a signal handler

struct Mapping {
  std::size_t size;
  std::string path;
  int fd;
};

// Mapped files by the address of their first byte.
struct Registry {
  std::mutex lock;
  std::map<std::uintptr_t, Mapping> maps;
};

Registry& registry() {
  static Registry* const instance = new Registry();  // never destroyed: maps outlive statics
  return *instance;
}

// The error for a fault at `offset` of `mapping`'s file: shrunk below it, or an I/O error.
Error fault_error(const Mapping& mapping, std::uint64_t offset) {
  const std::string where = "byte " + std::to_string(offset) + " could not be read through the map";
  struct stat now {};
  if (::fstat(mapping.fd, &now) != 0) {
    return {ErrorKind::io, where + " (the file cannot be examined)", offset, {}, mapping.path};
  }
  const auto size = static_cast<std::uint64_t>(now.st_size);
  if (size <= offset) {
    return {ErrorKind::io,
            "the file is now " + std::to_string(size) + " bytes, " + std::to_string(mapping.size) +
                " at open: " + where + " (did it shrink while open?)",
            offset,
            {},
            mapping.path};
  }
  return {ErrorKind::io,
          where + ": an I/O error under the map (the file is " + std::to_string(size) + " bytes)",
          offset,
          {},
          mapping.path};
}

}  // namespace

std::pair<std::uintptr_t, std::uintptr_t> map_of(std::uintptr_t address) noexcept {
  for (MapSlot& slot : map_slots) {
    const std::uintptr_t end = slot.end.load(std::memory_order_acquire);
    const std::uintptr_t begin = slot.begin.load(std::memory_order_relaxed);
    if (end != 0 && address >= begin && address < end) return {begin, end};
  }
  return {0, 0};
}

// The first byte of `bytes` past the end its mapped file has now, or 0 (none, or in no mapped
// file of onnxmap).
std::uintptr_t first_lost_byte(std::span<const std::byte> bytes) {
  if (bytes.empty()) return 0;
  const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data());
  Registry& r = registry();
  const std::lock_guard lock(r.lock);
  const auto after = r.maps.upper_bound(begin);
  if (after == r.maps.begin() || begin - std::prev(after)->first >= std::prev(after)->second.size) {
    return 0;
  }
  const auto& [map_begin, mapping] = *std::prev(after);
  struct stat now {};
  if (::fstat(mapping.fd, &now) != 0) return 0;
  const std::uintptr_t file_end = map_begin + static_cast<std::uintptr_t>(now.st_size);
  return file_end < begin + bytes.size() ? std::max(file_end, begin) : 0;
}

// The first byte of any mapped file of onnxmap past the end its file has now, or 0.
std::uintptr_t first_lost_byte_of_any_map() {
  std::vector<std::span<const std::byte>> maps;
  {
    Registry& r = registry();
    const std::lock_guard lock(r.lock);
    for (const auto& [begin, mapping] : r.maps) {
      maps.emplace_back(reinterpret_cast<const std::byte*>(begin), mapping.size);
    }
  }
  for (const auto map : maps) {
    if (const std::uintptr_t lost = first_lost_byte(map)) return lost;
  }
  return 0;
}

// Maps the file again under the pages [begin, end) that a stand-in guard put zeros in, so that
// the next read there faults (and is seen) again. A map no longer registered was unmapped, the
// zeros with it: its addresses may belong to another map now, and are left alone.
void map_file_again(std::uintptr_t begin, std::uintptr_t end) {
  Registry& r = registry();
  const std::lock_guard lock(r.lock);
  const auto after = r.maps.upper_bound(begin);
  if (after == r.maps.begin() || begin - std::prev(after)->first >= std::prev(after)->second.size) {
    return;
  }
  const auto& [map_begin, mapping] = *std::prev(after);
  void* const at = reinterpret_cast<void*>(begin);
  const std::size_t length = end - begin;
  if (::mmap(at, length, PROT_READ, MAP_SHARED | MAP_FIXED, mapping.fd,
             static_cast<off_t>(begin - map_begin)) == MAP_FAILED) {
    // Unreadable rather than zeros: a later read fails loudly, never reads a wrong value.
    (void)::mmap(at, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    return;
  }
  (void)::madvise(at, length, MADV_RANDOM);  // as MappedFile::open advised the whole map
  (void)::madvise(at, length, MADV_NOHUGEPAGE);
}

void with_registry_locked(const std::function<void()>& work) {
  const std::lock_guard lock(registry().lock);
  work();
}

Error mapped_fault_error(const void* address) {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  std::optional<Mapping> mapping;
  std::uint64_t offset = 0;
  {
    Registry& r = registry();
    const std::lock_guard lock(r.lock);
    const auto after = r.maps.upper_bound(at);
    if (after != r.maps.begin() && at - std::prev(after)->first < std::prev(after)->second.size) {
      mapping = std::prev(after)->second;
      offset = at - std::prev(after)->first;
    }
    // Looked up under the lock: the map (and so its descriptor) cannot go before fstat.
    if (mapping) return fault_error(*mapping, offset);
  }
  return {ErrorKind::io, "a fault (SIGBUS) reading mapped memory that no open model holds"};
}

void register_mapping(std::span<const std::byte> map, const std::filesystem::path& path, int fd) {
  Registry& r = registry();
  const std::lock_guard lock(r.lock);
  const auto begin = reinterpret_cast<std::uintptr_t>(map.data());
  r.maps.insert_or_assign(begin, Mapping{map.size(), path.string(), fd});
  for (MapSlot& slot : map_slots) {
    std::uintptr_t free = 0;
    if (slot.begin.compare_exchange_strong(free, begin, std::memory_order_relaxed)) {
      slot.end.store(begin + map.size(), std::memory_order_release);
      return;
    }
  }
}

void unregister_mapping(const std::byte* begin) noexcept {
  Registry& r = registry();
  const std::lock_guard lock(r.lock);
  const auto at = reinterpret_cast<std::uintptr_t>(begin);
  const auto it = r.maps.find(at);
  if (it != r.maps.end()) {
    const Mapping& mapping = it->second;
    note_unmapped_faults(at, mapping.size,
                         [&](std::uint64_t offset) { return fault_error(mapping, offset); });
    r.maps.erase(it);
  }
  for (MapSlot& slot : map_slots) {
    if (slot.begin.load(std::memory_order_relaxed) != at) continue;
    slot.end.store(0, std::memory_order_release);
    slot.begin.store(0, std::memory_order_relaxed);
    return;
  }
}

}  // namespace onnxmap::detail
