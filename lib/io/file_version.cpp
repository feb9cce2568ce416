#include "io/file_version.hpp"

#include <sys/stat.h>

namespace onnxmap {

namespace {

FileVersion version_of(const struct stat& st) {
  return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
          static_cast<std::uint64_t>(st.st_size),
          static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

}  // namespace

std::optional<FileVersion> file_version(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return version_of(st);
}

namespace io {

std::optional<FileVersion> open_file_version(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::nullopt;
  return version_of(st);
}

}  // namespace io

}  // namespace onnxmap
