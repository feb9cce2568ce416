#pragma once
// A file written beside its destination and renamed into place when complete: the destination
// holds the old file or the new one, never part of one. Every writer of onnxmap writes through
// it (save and convert, their external data files, `get`'s outputs, the remote cache's records).
//
// The file is created unnamed in the destination's folder (O_TMPFILE) where the file system
// allows, so that a process killed while writing leaves nothing behind; elsewhere, and once named
// for the rename, it has a hidden temporary name beside the destination (".NAME.onnxmap-...").
// The same folder makes the rename atomic.

#include <cstddef>
#include <filesystem>
#include <span>

namespace onnxmap::io {

class NewFile {
 public:
  // Creates the file in the folder of `final_path`. Throws onnxmap::Error (io) naming
  // `final_path`.
  explicit NewFile(std::filesystem::path final_path);
  // Closes the file; a file never committed is removed (its temporary name too).
  ~NewFile();
  NewFile(NewFile&& other) noexcept;
  NewFile& operator=(NewFile&&) = delete;
  NewFile(const NewFile&) = delete;
  NewFile& operator=(const NewFile&) = delete;

  // The descriptor to write through (open for writing), until name() or commit().
  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] const std::filesystem::path& final_path() const noexcept { return final_path_; }

  // Writes all of `bytes` at the descriptor's position (retrying short writes). Throws
  // onnxmap::Error (io).
  void write_all(std::span<const std::byte> bytes) const;
  // Syncs the file's bytes to the disk (for writers that must survive a power cut). Throws
  // onnxmap::Error (io).
  void sync() const;
  // Gives an unnamed file its temporary name and closes the descriptor: for a writer that holds
  // many finished files and must not hold a descriptor for each. A process killed from here on
  // leaves the temporary name behind. Throws onnxmap::Error (io).
  void name();
  // Renames the file into place, atomically replacing a file there (never writing into it), and
  // closes it. Throws onnxmap::Error (io); the file is then removed by the destructor.
  void commit();

 private:
  [[nodiscard]] std::filesystem::path folder() const;
  [[nodiscard]] int create_named();
  void close_fd();

  std::filesystem::path final_path_;
  std::filesystem::path temp_path_;  // empty while the file has no name
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace onnxmap::io
