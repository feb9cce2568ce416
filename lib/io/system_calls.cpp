// The system calls' seam (system_calls.hpp).

#include "io/system_calls.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace onnxmap::io {

namespace {

SystemCalls& the_system() noexcept {
  static SystemCalls system;
  return system;
}

std::atomic<SystemCalls*> g_installed{nullptr};

}  // namespace

int SystemCalls::open_direct(const char* path) {
  return ::open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
}

ssize_t SystemCalls::pread_direct(int fd, std::span<std::byte> dst, std::uint64_t offset) {
  return ::pread(fd, dst.data(), dst.size(), static_cast<off_t>(offset));
}

int SystemCalls::rename(const char* from, const char* to) {
  return std::rename(from, to);
}

int SystemCalls::unlink(const char* path) {
  return ::unlink(path);
}

SystemCalls& system_calls() noexcept {
  SystemCalls* installed = g_installed.load(std::memory_order_acquire);
  return installed != nullptr ? *installed : the_system();
}

SystemCalls* install_system_calls(SystemCalls* calls) noexcept {
  return g_installed.exchange(calls, std::memory_order_acq_rel);
}

}  // namespace onnxmap::io
