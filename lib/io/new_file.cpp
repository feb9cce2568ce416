#include "io/new_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>

#include "io/system_calls.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::io {

namespace {

// Tries this many names before giving up (a name is taken only by a file left over by a killed
// writer, or by another writer of the same destination at the same moment).
constexpr int kNameAttempts = 100;

// Hidden, beside the destination, unique to this process and this call; where a killed writer
// left it, its name says which destination it was for.
std::string temp_name_for(const std::filesystem::path& final_path) {
  static std::atomic<std::uint64_t> counter{0};
  thread_local std::mt19937_64 random{std::random_device{}()};
  return "." + final_path.filename().string() + ".onnxmap-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter++) + "-" + std::to_string(random() % 1000000);
}

[[noreturn]] void fail(const std::filesystem::path& final_path, const std::string& what) {
  throw Error(ErrorKind::io, what + ": " + std::strerror(errno), Error::kNoOffset, {},
              final_path.string());
}

}  // namespace

NewFile::NewFile(std::filesystem::path final_path) : final_path_(std::move(final_path)) {
  fd_ = ::open(folder().c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  // The folder's own problems (missing, not a folder, no permission) are reported as they are;
  // any other refusal means the file system has no unnamed files.
  if (fd_ < 0 && errno != ENOENT && errno != ENOTDIR && errno != EACCES) fd_ = create_named();
  if (fd_ < 0) fail(final_path_, "cannot create a file in its folder");
}

NewFile::~NewFile() {
  close_fd();
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

NewFile::NewFile(NewFile&& other) noexcept
    : final_path_(std::move(other.final_path_)),
      temp_path_(std::exchange(other.temp_path_, {})),
      fd_(std::exchange(other.fd_, -1)),
      committed_(std::exchange(other.committed_, true)) {}

std::filesystem::path NewFile::folder() const {
  return final_path_.parent_path().empty() ? std::filesystem::path(".") : final_path_.parent_path();
}

int NewFile::create_named() {
  int fd = -1;
  for (int attempt = 0; attempt < kNameAttempts && fd < 0; ++attempt) {
    temp_path_ = folder() / temp_name_for(final_path_);
    // O_EXCL: never opens an existing file, never follows a symlink planted under this name.
    fd = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) temp_path_.clear();
  return fd;
}

void NewFile::close_fd() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void NewFile::write_all(std::span<const std::byte> bytes) const {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      fail(final_path_, "write failed");
    }
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
}

void NewFile::sync() const {
  if (::fsync(fd_) != 0) fail(final_path_, "fsync failed");
}

void NewFile::name() {
  if (temp_path_.empty()) {
    const std::string self = "/proc/self/fd/" + std::to_string(fd_);
    for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
      temp_path_ = folder() / temp_name_for(final_path_);
      // Through /proc first: AT_EMPTY_PATH needs a capability most users lack.
      if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, temp_path_.c_str(), AT_SYMLINK_FOLLOW) == 0 ||
          ::linkat(fd_, "", AT_FDCWD, temp_path_.c_str(), AT_EMPTY_PATH) == 0) {
        break;
      }
      const int error = errno;
      temp_path_.clear();
      errno = error;
      if (error != EEXIST) break;
    }
    if (temp_path_.empty()) fail(final_path_, "cannot name the file");
  }
  const int fd = std::exchange(fd_, -1);
  if (fd >= 0 && ::close(fd) != 0) fail(final_path_, "close failed");
}

void NewFile::commit() {
  name();
  if (system_calls().rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    fail(final_path_, "cannot rename into place");
  }
  committed_ = true;
}

}  // namespace onnxmap::io
