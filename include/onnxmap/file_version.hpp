#pragma once
// Which file a path names, and which version of it: what a long-running reader compares to learn
// that the file on disk is no longer the one it opened (Model::changed_on_disk).
// Threads: file_version reads only its argument and the file system; call it from any thread.

#include <cstdint>
#include <filesystem>
#include <optional>

#include "onnxmap/export.hpp"

namespace onnxmap {

// The device and inode name the file (a file replaced by rename is another inode); the size and
// the modification time say whether it was written since.
struct FileVersion {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::uint64_t size = 0;
  std::int64_t modified_ns = 0;  // modification time, nanoseconds since the Unix epoch

  friend bool operator==(const FileVersion&, const FileVersion&) = default;
};

// The version of the file at `path` now (one stat, following symlinks); nullopt when there is
// no file there (or it cannot be looked at).
[[nodiscard]] ONNXMAP_API std::optional<FileVersion> file_version(
    const std::filesystem::path& path);

}  // namespace onnxmap
