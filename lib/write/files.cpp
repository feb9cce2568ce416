#include "write/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "io/read_check.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::detail {

namespace {

// Ranges at least this large are copied by the kernel (copy_file_range): no page of the source
// is mapped into this process, so converting a 300 GB model keeps a flat RSS.
constexpr std::uint64_t kKernelCopyMin = std::uint64_t{256} << 10U;
constexpr std::size_t kChunk = std::size_t{1} << 20U;
// The smallest write buffer, 4 KiB: small files still get a buffer from the ordinary heap.
constexpr std::size_t kMinBuffer = std::size_t{4} << 10U;

bool kernel_copy_unsupported(int error) {
  return error == EXDEV || error == EINVAL || error == ENOSYS || error == EOPNOTSUPP ||
         error == EBADF;
}

}  // namespace

int SourceFile::open_for_copy() const {
  if (file_ == nullptr) return -1;
  // The open file, not its path: a model replaced by rename since it was opened is copied as
  // it was opened. A description of its own (through /proc) keeps the kernel's read-ahead;
  // without /proc, a duplicate of the reader's, which reads at offsets only.
  const std::string self = "/proc/self/fd/" + std::to_string(file_->fd());
  int fd = ::open(self.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fd = ::fcntl(file_->fd(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::uint64_t>(st.st_size) != bytes_.size()) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void Progress::advance(std::uint64_t bytes) {
  done_ += bytes;
  // Report about every 0.5% (and at least every 64 MiB of progress); callbacks stay cheap.
  const std::uint64_t step =
      std::max<std::uint64_t>(std::min<std::uint64_t>(total_ / 200, std::uint64_t{64} << 20U), 1);
  if (callback_ && done_ - reported_ >= step) {
    reported_ = done_;
    callback_(done_, total_);
  }
}

void Progress::finish() {
  if (callback_) callback_(total_, total_);
}

OutputFile::OutputFile(std::filesystem::path final_path, Progress& progress,
                       std::uint64_t planned_size)
    : file_(std::move(final_path)), fd_(file_.fd()), progress_(progress) {
  // No larger than the file: a save with one file per tensor writes thousands of small files,
  // and a 1 MiB buffer for each is a large allocation (mmap, page faults, munmap) every time.
  const auto buffer = static_cast<std::size_t>(
      std::clamp<std::uint64_t>(planned_size, kMinBuffer, std::uint64_t{kChunk}));
  stream_.open(boost::iostreams::file_descriptor_sink(fd_, boost::iostreams::never_close_handle),
               static_cast<std::streamsize>(buffer));
}

OutputFile::~OutputFile() {
  if (stream_.is_open()) {
    try {
      stream_.close();
    } catch (...) {  // the file is being abandoned; its write error was already reported
    }
  }
  close_source();
}

void OutputFile::fail(const char* what) const {
  throw Error(ErrorKind::io, std::string(what) + ": " + std::strerror(errno), position_, {},
              file_.final_path().string());
}

void OutputFile::flush() {
  errno = 0;
  try {
    if (stream_.pubsync() != 0) fail("write failed");
  } catch (const std::ios_base::failure&) {
    fail("write failed");
  }
}

void OutputFile::write(std::span<const std::byte> bytes) {
  errno = 0;
  try {
    const auto n = static_cast<std::streamsize>(bytes.size());
    if (stream_.sputn(reinterpret_cast<const char*>(bytes.data()), n) != n) fail("write failed");
  } catch (const std::ios_base::failure&) {
    fail("write failed");
  }
  position_ += bytes.size();
  progress_.advance(bytes.size());
}

int OutputFile::source_fd(const SourceFile& source) {
  if (copy_source_.source != &source) {
    close_source();
    copy_source_.source = &source;
    copy_source_.fd = source.open_for_copy();  // -1 is kept too: not opened again for each copy
  }
  return copy_source_.fd;
}

void OutputFile::close_source() {
  if (copy_source_.fd >= 0) ::close(copy_source_.fd);
  copy_source_ = CopySource{};
}

std::pair<std::uint64_t, std::uint64_t> OutputFile::next_data(std::uint64_t at, std::uint64_t end) {
  CopySource& s = copy_source_;
  // Payloads are copied in file order, so the extent the last walk ended in usually answers
  // this one: a sparse model with hundreds of tensors needs no lseek for most of them.
  const bool known = at >= s.hole_from && at < s.data_to;
  if (!known) {
    const off_t data = ::lseek(s.fd, static_cast<off_t>(at), SEEK_DATA);
    if (data < 0 && errno != ENXIO) return {at, end};  // no hole queries: copy it all
    s.hole_from = at;
    s.data_from = data < 0 ? UINT64_MAX : static_cast<std::uint64_t>(data);
    s.data_to = UINT64_MAX;
    if (data >= 0) {  // asked even where the data starts past `end`: the next copy starts there
      const off_t hole = ::lseek(s.fd, data, SEEK_HOLE);
      if (hole >= 0) s.data_to = static_cast<std::uint64_t>(hole);
    }
  }
  const std::uint64_t begin = std::clamp(s.data_from, at, end);
  return {begin, std::clamp(s.data_to, begin, end)};
}

void OutputFile::copy(const SourceFile& source, std::uint64_t offset, std::uint64_t length) {
  const int fd = length < kKernelCopyMin ? -1 : source_fd(source);
  if (fd < 0) {
    // Bytes of a map copied by the stream's memcpy: in a FrontEndScope, a lost page is an Error
    // here rather than SIGBUS there.
    detail::check_for_front_end(source.bytes().subspan(offset, length));
    write(source.bytes().subspan(offset, length));
    return;
  }
  flush();  // the stream is empty from here on, so the descriptor's position is position_
  std::uint64_t at = offset;
  const std::uint64_t end = offset + length;
  while (at < end) {
    // Holes in the source stay holes: a sparse 300 GB model converts without writing zeros.
    const auto [data_begin, data_end] = next_data(at, end);
    if (data_begin > at && ::lseek(fd_, static_cast<off_t>(data_begin - at), SEEK_CUR) < 0) {
      fail("seek failed");
    }
    if (data_begin == end) break;
    copy_in_kernel(fd, data_begin, data_end - data_begin);
    at = data_end;
  }
  position_ += length;
  progress_.advance(length);
}

void OutputFile::write_fd(const char* bytes, std::size_t length) {
  try {
    file_.write_all(std::as_bytes(std::span(bytes, length)));
  } catch (const Error& e) {
    throw Error(e.kind(), e.detail(), position_, {}, e.file());
  }
}

void OutputFile::copy_in_kernel(int source_fd, std::uint64_t offset, std::uint64_t length) {
  auto in = static_cast<off_t>(offset);
  while (length > 0) {
    const ssize_t n = ::copy_file_range(source_fd, &in, fd_, nullptr, length, 0);
    if (n > 0) {
      length -= static_cast<std::uint64_t>(n);
      continue;
    }
    if (n == 0) {
      errno = EIO;  // the source ended early: it shrank since it was opened
      fail("source file ended early");
    }
    if (errno == EINTR) continue;
    if (!kernel_copy_unsupported(errno)) fail("copy failed");
    // Another filesystem or an old kernel: read and write through a buffer.
    std::vector<char> buffer(std::min<std::uint64_t>(length, kChunk));
    while (length > 0) {
      const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(length, buffer.size()));
      const ssize_t got = ::pread(source_fd, buffer.data(), want, in);
      if (got <= 0) {
        if (got < 0 && errno == EINTR) continue;
        if (got == 0) errno = EIO;
        fail("read failed");
      }
      write_fd(buffer.data(), static_cast<std::size_t>(got));
      in += got;
      length -= static_cast<std::uint64_t>(got);
    }
  }
}

void OutputFile::skip_to(std::uint64_t position) {
  if (position <= position_) return;
  flush();
  if (::lseek(fd_, static_cast<off_t>(position - position_), SEEK_CUR) < 0) fail("seek failed");
  progress_.advance(position - position_);
  position_ = position;
}

io::NewFile OutputFile::finish(bool durable) {
  close_source();
  flush();
  if (::ftruncate(fd_, static_cast<off_t>(position_)) != 0) fail("cannot size");
  stream_.close();
  if (durable) file_.sync();
  return std::move(file_);
}

}  // namespace onnxmap::detail
