#pragma once
// A file's bytes, read-only: memory-mapped by default (nothing is read until touched), or copied
// into memory for inputs that cannot be mapped (pipes, stdin) or should not be (files that may
// shrink under us: a mapped file truncated after open raises SIGBUS on the next touch).

#include <boost/interprocess/mapped_region.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "onnxmap/load_mode.hpp"

namespace onnxmap {

class MappedFile {
 public:
  // Opens `path` ("-" is standard input, always read). Throws onnxmap::Error (io) on failure.
  [[nodiscard]] static MappedFile open(const std::filesystem::path& path,
                                       LoadMode mode = LoadMode::map);
  // Bytes the caller already holds, for tests and in-memory models; they are copied.
  [[nodiscard]] static MappedFile from_bytes(std::span<const std::byte> bytes);

  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return bytes_; }
  [[nodiscard]] std::uint64_t size() const noexcept { return bytes_.size(); }
  [[nodiscard]] bool is_mapped() const noexcept { return owned_.empty() && !bytes_.empty(); }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  // Ask the kernel to read [offset, offset+length) ahead (MADV_WILLNEED), or to drop those pages
  // (MADV_DONTNEED; clean file pages are re-read on the next touch). No-ops for read mode.
  void prefetch(std::uint64_t offset, std::uint64_t length) const noexcept;
  void release(std::uint64_t offset, std::uint64_t length) const noexcept;
  // Like release, but only the pages lying wholly inside the range, so that bytes beside it that
  // are in use stay mapped.
  void release_interior(std::uint64_t offset, std::uint64_t length) const noexcept;

  // The system's page size, the unit of mapping.
  [[nodiscard]] static std::uint64_t page_size() noexcept;

 private:
  std::filesystem::path path_;
  boost::interprocess::mapped_region region_;
  std::vector<std::byte> owned_;
  std::span<const std::byte> bytes_;
};

}  // namespace onnxmap
