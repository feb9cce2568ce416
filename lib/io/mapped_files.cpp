// The table of onnxmap's mapped files (mapped_files.hpp) and what a fault's error says of its
// file.

#include "io/mapped_files.hpp"

#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace onnxmap::detail {

namespace {

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

Error mapped_fault_error(const void* address) {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  Registry& r = registry();
  const std::lock_guard lock(r.lock);
  const auto after = r.maps.upper_bound(at);
  if (after != r.maps.begin() && at - std::prev(after)->first < std::prev(after)->second.size) {
    // Under the lock: the map (and so its descriptor) cannot go before fstat.
    return fault_error(std::prev(after)->second, at - std::prev(after)->first);
  }
  return {ErrorKind::io, "a fault (SIGBUS) reading mapped memory that no open model holds"};
}

void register_mapping(std::span<const std::byte> map, const std::filesystem::path& path, int fd) {
  Registry& r = registry();
  const std::lock_guard lock(r.lock);
  r.maps.insert_or_assign(reinterpret_cast<std::uintptr_t>(map.data()),
                          Mapping{map.size(), path.string(), fd});
}

void unregister_mapping(const std::byte* begin) noexcept {
  Registry& r = registry();
  const std::lock_guard lock(r.lock);
  r.maps.erase(reinterpret_cast<std::uintptr_t>(begin));
}

}  // namespace onnxmap::detail
