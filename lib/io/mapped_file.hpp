#pragma once
// A file's bytes, read-only: memory-mapped by default (Boost.Interprocess's mapped_region over
// the descriptor that also serves positioned reads and fstat; nothing is read until touched), or
// copied into memory (LoadMode::read, LoadMode::direct) for files that should not be mapped (a
// mapped file truncated after open raises SIGBUS on the next touch, which only onnxmap's guarded
// kernels turn into errors: io/fault_guard.hpp; each map is registered in io/mapped_files.hpp) or
// cannot be (pipes, stdin).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>

#include "onnxmap/file_version.hpp"
#include "onnxmap/options.hpp"

namespace onnxmap {

namespace io {
class FileReader;
class LazyReopen;
}  // namespace io

class MappedFile {
 public:
  // Opens `path` ("-" is standard input, always read). Throws onnxmap::Error (io) on failure,
  // with the same message in every mode.
  [[nodiscard]] static MappedFile open(const std::filesystem::path& path,
                                       LoadMode mode = LoadMode::map);
  // Bytes the caller already holds, for tests and in-memory models; they are copied.
  [[nodiscard]] static MappedFile from_bytes(std::span<const std::byte> bytes);

  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return bytes_; }
  [[nodiscard]] std::uint64_t size() const noexcept { return bytes_.size(); }
  [[nodiscard]] bool is_mapped() const noexcept { return mapped_; }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  // The version of the regular file opened, as it was at open; nullopt for standard input, a
  // pipe or bytes.
  [[nodiscard]] const std::optional<FileVersion>& version() const noexcept { return version_; }
  // For a mapped file: the open file behind the map, for positioned reads; else null.
  [[nodiscard]] const io::FileReader* reader() const noexcept { return reader_.get(); }
  // For a mapped file: a buffered reader of it with the kernel's read-ahead (read_ahead's own),
  // opened on first use; else null.
  [[nodiscard]] const io::LazyReopen* buffered_reader() const noexcept {
    return read_ahead_reader_.get();
  }

  // Reads [offset, offset+length) into the page cache now, in large requests, and returns when
  // the bytes are there: touching them afterwards costs no disk read. Page faults on this map
  // read 4 KiB at a time (it is advised for random access, so that opening reads only
  // metadata), which is slow on a cold file. No-op for copied files; errors are ignored (it is
  // advice: a file that shrank faults on the next touch). The reads go through a second
  // descriptor of the file, opened on the first call and kept while the file is; any number of
  // threads may call it at once.
  void read_ahead(std::uint64_t offset, std::uint64_t length) const noexcept;
  // Advises the kernel that [offset, offset+length), one payload, will be read in order
  // (MADV_SEQUENTIAL), so a fault there reads ahead in large chunks instead of one page, and
  // allows huge pages inside it (allow_huge_pages). Each 2 MiB of the file is advised at most
  // once, so calling it on every access costs two atomic loads.
  void advise_sequential(std::uint64_t offset, std::uint64_t length) const noexcept;
  // Allows huge pages on the 2 MiB blocks of the address space wholly inside [offset,
  // offset+length), which must hold payload bytes only (MADV_HUGEPAGE; the map is opened with
  // MADV_NOHUGEPAGE, see open). A fault there then reads the file in 2 MiB folios and maps each
  // with one page-table entry: a warm read of a large tensor takes half the time, with a
  // 512th of the TLB misses. Unmapping part of such a block (release) unmaps all of it.
  void allow_huge_pages(std::uint64_t offset, std::uint64_t length) const noexcept;
  // Drops the pages of [offset, offset+length) from this process (MADV_DONTNEED; clean file
  // pages are re-read on the next touch). No-op for copied files.
  void release(std::uint64_t offset, std::uint64_t length) const noexcept;
  // Maps the pages of [offset, offset+length) into the process now, in one system call
  // (MADV_POPULATE_READ, Linux 5.14; a no-op before), rather than a fault per 64 KiB on the
  // first read. For pages in the page cache already: it reads any that are not.
  void map_cached(std::uint64_t offset, std::uint64_t length) const noexcept;
  // Whether every page of [offset, offset+length) is in the page cache (one mincore call), so
  // that a caller can skip reading ahead what is there. Copied files: always.
  [[nodiscard]] bool resident(std::uint64_t offset, std::uint64_t length) const;
  // Like release, but only the pages lying wholly inside the range, so that bytes beside it that
  // are in use stay mapped.
  void release_interior(std::uint64_t offset, std::uint64_t length) const noexcept;

  // The system's page size, the unit of mapping.
  [[nodiscard]] static std::uint64_t page_size() noexcept;

 private:
  std::filesystem::path path_;
  std::optional<FileVersion> version_;
  std::shared_ptr<const std::byte> storage_;  // the mapping (unmapped at the end) or a copy
  std::span<const std::byte> bytes_;
  bool mapped_ = false;
  std::shared_ptr<const io::FileReader> reader_;
  // The descriptor read_ahead reads through, opened on its first call.
  std::shared_ptr<const io::LazyReopen> read_ahead_reader_;
  // One flag per 2 MiB of a mapped file: advised sequential already (read and set through
  // std::atomic_ref: any number of threads advise at once).
  std::shared_ptr<std::uint8_t[]> advised_;
};

}  // namespace onnxmap
