#include "io/file_reader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "io/system_calls.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::io {

namespace {

Error io_error(const std::filesystem::path& path, const std::string& what) {
  return {ErrorKind::io, what, Error::kNoOffset, {}, path.string()};
}

Error short_file(const std::filesystem::path& path, std::uint64_t end) {
  return io_error(
      path, "the file ends before byte " + std::to_string(end) + " (did it shrink while open?)");
}

// The unit of a whole-file read: large enough for the device to stream, small enough to spread
// over a few threads.
constexpr std::uint64_t kWholeFileChunk = std::uint64_t{16} << 20U;

constexpr std::size_t kHugePage = std::size_t{2} << 20U;

}  // namespace

AlignedBuffer::AlignedBuffer(std::size_t size) : size_(size) {
  if (size == 0) return;
  // A buffer of huge pages or more starts on one, and its whole huge pages are asked to be
  // backed by them (where the kernel's setting allows): a fault per 2 MiB instead of per 4 KiB,
  // and fewer pages to pin for each direct read. The tail stays in small pages, so a buffer
  // holds no more memory than it was asked for.
  const std::size_t alignment = size >= kHugePage ? kHugePage : kDirectAlign;
  void* p = std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
  if (p == nullptr) throw std::bad_alloc();
  data_.reset(static_cast<std::byte*>(p));
  if (alignment == kHugePage) (void)::madvise(p, size / kHugePage * kHugePage, MADV_HUGEPAGE);
}

void AlignedBuffer::Free::operator()(std::byte* p) const noexcept {
  std::free(p);
}

FileReader::FileReader(const std::filesystem::path& path, LoadMode mode) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw io_error(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    close();
    throw io_error(path, "cannot open: not a regular file");
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
  // tmpfs and some network file systems refuse O_DIRECT (EINVAL): reads are buffered there.
  if (mode == LoadMode::direct) direct_fd_ = system_calls().open_direct(path.c_str());
}

FileReader FileReader::reopen(LoadMode mode) const {
  FileReader out;
  out.path_ = path_;
  out.size_ = size_;
  const std::string self = "/proc/self/fd/" + std::to_string(fd_);
  out.fd_ = ::open(self.c_str(), O_RDONLY | O_CLOEXEC);
  const bool own_description = out.fd_ >= 0;
  if (!own_description) out.fd_ = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);  // no /proc: share it
  if (out.fd_ < 0) throw io_error(path_, std::string("cannot open: ") + std::strerror(errno));
  if (own_description) (void)::posix_fadvise(out.fd_, 0, 0, POSIX_FADV_RANDOM);
  if (mode == LoadMode::direct) out.direct_fd_ = system_calls().open_direct(self.c_str());
  return out;
}

const FileReader& LazyReopen::get() const {
  if (const FileReader* ready = ready_.load(std::memory_order_acquire)) return *ready;
  const std::lock_guard lock(opening_);
  if (!reader_) reader_.emplace(source_->reopen(LoadMode::read));
  ready_.store(&*reader_, std::memory_order_release);
  return *reader_;
}

FileReader::FileReader(FileReader&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      direct_fd_(std::exchange(other.direct_fd_, -1)),
      direct_refused_(other.direct_refused_.load()),
      size_(other.size_) {}

FileReader& FileReader::operator=(FileReader&& other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    direct_fd_ = std::exchange(other.direct_fd_, -1);
    direct_refused_ = other.direct_refused_.load();
    size_ = other.size_;
  }
  return *this;
}

FileReader::~FileReader() {
  close();
}

void FileReader::close() noexcept {
  if (fd_ >= 0) ::close(fd_);
  if (direct_fd_ >= 0) ::close(direct_fd_);
  fd_ = direct_fd_ = -1;
}

std::uint64_t FileReader::staging_size(std::uint64_t offset, std::uint64_t length) noexcept {
  return align_up(offset + length) - align_down(offset);
}

bool FileReader::read_scattered(std::span<const iovec> vectors, std::uint64_t offset,
                                std::uint64_t length) const noexcept {
  const ssize_t got =
      ::preadv(fd_, vectors.data(), static_cast<int>(vectors.size()), static_cast<off_t>(offset));
  return got >= 0 && static_cast<std::uint64_t>(got) == length;
}

std::span<const std::byte> FileReader::read(std::uint64_t offset, std::uint64_t length,
                                            std::span<std::byte> staging) const {
  if (is_direct()) {
    const std::uint64_t begin = align_down(offset);
    const std::uint64_t want = offset + length - begin;
    const auto window = staging.first(static_cast<std::size_t>(staging_size(offset, length)));
    const ssize_t got = system_calls().pread_direct(direct_fd_, window, begin);
    if (got >= 0 && static_cast<std::uint64_t>(got) >= want) {
      return window.subspan(static_cast<std::size_t>(offset - begin),
                            static_cast<std::size_t>(length));
    }
    // EINVAL: the device wants a larger alignment than kDirectAlign, or the file system takes
    // O_DIRECT opens but not reads. Every read of this reader is buffered from now on.
    if (got < 0 && errno == EINVAL) direct_refused_.store(true, std::memory_order_relaxed);
    if (got < 0 && errno != EINVAL && errno != EINTR) {
      throw io_error(path_, std::string("cannot read: ") + std::strerror(errno));
    }
    // A short direct read (end of file, a signal): the buffered read below finds out which.
  }
  // Where a direct read would have put them, so that a caller reading in place can count on it.
  const auto dst = staging.subspan(static_cast<std::size_t>(offset - align_down(offset)),
                                   static_cast<std::size_t>(length));
  if (pread_full(fd_, offset, dst, path_) < length) throw short_file(path_, offset + length);
  return dst;
}

std::uint64_t pread_full(int fd, std::uint64_t offset, std::span<std::byte> dst,
                         const std::filesystem::path& path) {
  std::uint64_t done = 0;
  while (done < dst.size()) {
    const ssize_t got =
        ::pread(fd, dst.data() + done, dst.size() - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw io_error(path, std::string("cannot read: ") + std::strerror(errno));
    if (got == 0) break;
    done += static_cast<std::uint64_t>(got);
  }
  return done;
}

AlignedBuffer read_whole_file(const FileReader& reader, std::uint64_t size, unsigned threads) {
  AlignedBuffer out(static_cast<std::size_t>(size));
  const std::size_t chunks =
      static_cast<std::size_t>((size + kWholeFileChunk - 1) / kWholeFileChunk);
  run_parallel(chunks, threads, [&](std::size_t c) {
    const std::uint64_t begin = c * kWholeFileChunk;
    const std::uint64_t length = std::min(kWholeFileChunk, size - begin);
    // Chunks are aligned in the file and in the buffer, so each read lands in place.
    const std::span<std::byte> window(out.data() + begin,
                                      static_cast<std::size_t>(align_up(length)));
    (void)reader.read(begin, length, window);
  });
  return out;
}

void run_parallel(std::size_t count, unsigned threads,
                  const std::function<void(std::size_t)>& work) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_lock;
  const auto worker = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        work(i);
      } catch (...) {
        const std::lock_guard lock(failure_lock);
        if (!failure) failure = std::current_exception();
        next = count;
      }
    }
  };
  std::vector<std::jthread> pool;
  const unsigned n = std::max(1U, std::min<unsigned>(threads, static_cast<unsigned>(count)));
  for (unsigned t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  pool.clear();  // joins
  if (failure) std::rethrow_exception(failure);
}

}  // namespace onnxmap::io
