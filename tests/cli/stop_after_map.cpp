// Preloaded (LD_PRELOAD) into a command by shrink_test.py's run_halving: the first time the
// command maps the file named by ONNXMAP_STOP_AFTER_MAPPING (its canonical path, as
// /proc/self/fd shows it), the command stops itself (SIGSTOP) just after the mapping returns,
// before it reads a byte through it. The test then cuts the file and sends SIGCONT, so every
// read of the mapping meets the cut, whatever the machine's load (polling /proc/PID/maps from
// outside raced with small models: the command could finish before the test saw the map).
//
// The mapping itself is made by the mmap system call, not by the next library's mmap, so that
// nothing here depends on the order the loader put libraries in (a sanitizer runtime's mmap
// interceptor only tracks memory we do not touch).
// Both symbols are defined (a program built with _FILE_OFFSET_BITS=64 calls mmap64), so the
// header must not rename mmap to mmap64 here.
#undef _FILE_OFFSET_BITS
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

std::atomic<bool> stopped{false};

// Whether `fd` is open on `path` (both canonical).
bool names(int fd, const char* path) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char target[4096];
  const ssize_t length = ::readlink(link, target, sizeof target - 1);
  if (length < 0) return false;
  target[length] = '\0';
  return std::strcmp(target, path) == 0;
}

void* map_and_maybe_stop(void* address, size_t length, int protection, int flags, int fd,
                         off_t offset) {
  const long mapped = ::syscall(SYS_mmap, address, length, protection, flags, fd, offset);
  void* result = mapped == -1 ? MAP_FAILED : reinterpret_cast<void*>(mapped);
  const char* path = std::getenv("ONNXMAP_STOP_AFTER_MAPPING");
  if (result != MAP_FAILED && fd >= 0 && path != nullptr && names(fd, path) &&
      !stopped.exchange(true)) {
    ::raise(SIGSTOP);
  }
  return result;
}

}  // namespace

// noexcept: as <sys/mman.h> declares them.
extern "C" {

__attribute__((visibility("default"))) void* mmap(void* address, size_t length, int protection,
                                                  int flags, int fd, off_t offset) noexcept {
  return map_and_maybe_stop(address, length, protection, flags, fd, offset);
}

__attribute__((visibility("default"))) void* mmap64(void* address, size_t length, int protection,
                                                    int flags, int fd, off_t offset) noexcept {
  return map_and_maybe_stop(address, length, protection, flags, fd, offset);
}

}  // extern "C"
