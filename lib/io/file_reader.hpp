#pragma once
// Large positioned reads of a regular file, buffered (pread into the page cache) or direct
// (O_DIRECT, bypassing it), with the fallback where the file system refuses O_DIRECT. The
// building block of the read and direct load modes and of the loader.

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>

#include "onnxmap/options.hpp"

namespace onnxmap::io {

// O_DIRECT wants offsets, lengths and buffer addresses aligned to the device's logical block;
// 4096 covers every common device.
inline constexpr std::uint64_t kDirectAlign = 4096;

[[nodiscard]] constexpr std::uint64_t align_down(std::uint64_t v) noexcept {
  return v / kDirectAlign * kDirectAlign;
}
[[nodiscard]] constexpr std::uint64_t align_up(std::uint64_t v) noexcept {
  return align_down(v + kDirectAlign - 1);
}

// Memory aligned to kDirectAlign, not zeroed (large buffers are filled by reads, so zeroing them
// first would be a wasted pass over memory).
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t size);
  [[nodiscard]] std::byte* data() const noexcept { return data_.get(); }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::span<std::byte> span() const noexcept { return {data_.get(), size_}; }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept;
  };
  std::unique_ptr<std::byte[], Free> data_;
  std::size_t size_ = 0;
};

// One regular file opened for positioned reads in `mode` (map reads like read: it is used to
// fill the page cache under a mapping). Move-only; closes its descriptors.
class FileReader {
 public:
  FileReader(const std::filesystem::path& path, LoadMode mode);
  // The same open file (not the same path: it may have been replaced since), read in `mode`
  // with descriptors of its own. Buffered reads read no further than asked (POSIX_FADV_RANDOM):
  // the caller asks for exactly what it needs, in large requests.
  [[nodiscard]] FileReader reopen(LoadMode mode) const;
  FileReader(FileReader&& other) noexcept;
  FileReader& operator=(FileReader&& other) noexcept;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  ~FileReader();

  // Reads [offset, offset + length) into `staging` and returns where those bytes are in it:
  // from offset % kDirectAlign on, however they were read, so a caller can read in place.
  // `staging` must be kDirectAlign-aligned with room for staging_size(offset, length) bytes:
  // direct reads cover the aligned range around the request. Throws onnxmap::Error (io) naming
  // the file when the system refuses or the file ends before offset + length.
  std::span<const std::byte> read(std::uint64_t offset, std::uint64_t length,
                                  std::span<std::byte> staging) const;
  [[nodiscard]] static std::uint64_t staging_size(std::uint64_t offset,
                                                  std::uint64_t length) noexcept;
  // One buffered read of `length` bytes from `offset` scattered over `vectors` (preadv), for
  // callers that can place the bytes where they belong. False on a short read or an error: the
  // caller reads the range again through read(), which names it.
  [[nodiscard]] bool read_scattered(std::span<const iovec> vectors, std::uint64_t offset,
                                    std::uint64_t length) const noexcept;

  // Whether reads go around the page cache: false where the O_DIRECT open was refused, and from
  // the first direct read the system refused (EINVAL) on, whose request and all later ones are
  // read buffered.
  [[nodiscard]] bool is_direct() const noexcept {
    return direct_fd_ >= 0 && !direct_refused_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  // The buffered descriptor, for the map over the same file (io/).
  [[nodiscard]] int fd() const noexcept { return fd_; }

 private:
  FileReader() = default;
  void close() noexcept;
  std::filesystem::path path_;
  int fd_ = -1;         // buffered, always open
  int direct_fd_ = -1;  // O_DIRECT, in direct mode where the file system allows it
  mutable std::atomic<bool> direct_refused_{false};
  std::uint64_t size_ = 0;
};

// A reopen (FileReader::reopen, LoadMode::read) of `source`, made on first use and kept for this
// object's lifetime, so a caller that reads ahead again and again opens one descriptor, not one per
// call. Any number of threads may call get() at once.
class LazyReopen {
 public:
  explicit LazyReopen(std::shared_ptr<const FileReader> source) : source_(std::move(source)) {}
  // The reopened reader. Throws onnxmap::Error (io) when the open fails; the next call tries again.
  [[nodiscard]] const FileReader& get() const;

 private:
  std::shared_ptr<const FileReader> source_;
  mutable std::mutex opening_;
  mutable std::optional<FileReader> reader_;               // written once, under opening_
  mutable std::atomic<const FileReader*> ready_{nullptr};  // &*reader_ once it is open
};

// Reads exactly dst.size() bytes at `offset` of `fd` (retrying short reads and EINTR); returns
// the count read, less only at the end of the file. Throws onnxmap::Error (io) naming `path`.
std::uint64_t pread_full(int fd, std::uint64_t offset, std::span<std::byte> dst,
                         const std::filesystem::path& path);

// Reads a whole regular file of `size` bytes into an aligned buffer (size rounded up to
// kDirectAlign; the bytes past `size` are unspecified), in large requests on `threads` threads.
[[nodiscard]] AlignedBuffer read_whole_file(const FileReader& reader, std::uint64_t size,
                                            unsigned threads);

// Runs work(i) for i in [0, count) on up to `threads` threads (the caller's included); rethrows
// the first exception after every thread has stopped.
void run_parallel(std::size_t count, unsigned threads,
                  const std::function<void(std::size_t)>& work);

}  // namespace onnxmap::io
