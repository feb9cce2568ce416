#pragma once
// The system calls whose failures the library must handle but a test machine does not make on
// its own: O_DIRECT refused (every file system there may accept it), a rename or an unlink that
// fails midway through a save. The library makes them through this interface (as LevelDB makes
// its file operations through an Env); the default is the system itself. A test installs a
// SystemCalls of its own that refuses or watches (tests/unit/), so that no test code is in the
// library.
//
// Each call has its system call's contract: -1 with errno set on failure.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace onnxmap::io {

class SystemCalls {
 public:
  SystemCalls() = default;
  SystemCalls(const SystemCalls&) = delete;
  SystemCalls& operator=(const SystemCalls&) = delete;
  virtual ~SystemCalls() = default;

  // open(path, O_RDONLY | O_CLOEXEC | O_DIRECT): FileReader's direct descriptor.
  virtual int open_direct(const char* path);
  // pread() on such a descriptor.
  virtual ssize_t pread_direct(int fd, std::span<std::byte> dst, std::uint64_t offset);
  // rename(from, to): a new file put in place (NewFile::commit).
  virtual int rename(const char* from, const char* to);
  // unlink(path): a save's old model removed before data files replace its own.
  virtual int unlink(const char* path);
};

// The calls in use: the system's unless a test installed others.
[[nodiscard]] SystemCalls& system_calls() noexcept;
// Installs `calls` for the whole process (null: the system's again) and returns the previous
// ones (null for the system's). `calls` must outlive its use; install while no load or save runs.
SystemCalls* install_system_calls(SystemCalls* calls) noexcept;

}  // namespace onnxmap::io
