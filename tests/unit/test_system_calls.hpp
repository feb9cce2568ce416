#pragma once
// The tests' system calls (io/system_calls.hpp), built into the tests only: O_DIRECT refused as
// a refusing file system refuses it, and a save's renames and removal watched step by step or
// made to fail.

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <utility>

#include "io/system_calls.hpp"

namespace onnxmap::test {

enum class DirectRefusal : std::uint8_t { none, refuse_open, refuse_read };

// Fails every O_DIRECT open() (refuse_open) or pread() (refuse_read) with EINVAL, counting them.
class RefusingDirectIo final : public io::SystemCalls {
 public:
  std::atomic<DirectRefusal> refusal{DirectRefusal::none};
  std::atomic<std::uint64_t> refused{0};

  int open_direct(const char* path) override {
    if (refusal != DirectRefusal::refuse_open) return SystemCalls::open_direct(path);
    return refuse();
  }
  ssize_t pread_direct(int fd, std::span<std::byte> dst, std::uint64_t offset) override {
    if (refusal != DirectRefusal::refuse_read) return SystemCalls::pread_direct(fd, dst, offset);
    return refuse();
  }

 private:
  int refuse() noexcept {
    refused.fetch_add(1);
    errno = EINVAL;
    return -1;
  }
};

// From now on O_DIRECT is refused as `refusal` says (none: the system's calls again). Returns how
// many opens or reads were refused since the previous call.
inline std::uint64_t set_direct_refusal(DirectRefusal refusal) {
  static RefusingDirectIo calls;
  calls.refusal = refusal;
  (void)io::install_system_calls(refusal == DirectRefusal::none ? nullptr : &calls);
  return calls.refused.exchange(0);
}

// While it lives: every rename and unlink the library makes (the steps of a save's commit) is
// made, then `after` is called with the path that changed, so that a test looks at what a reader
// sees at that moment; the `fail_at`-th step (1 = the first; 0: none) is not made and fails
// with EIO instead, as a file system may fail it.
class WatchedSteps final : public io::SystemCalls {
 public:
  explicit WatchedSteps(std::function<void(const std::filesystem::path&)> after, int fail_at = 0)
      : after_(std::move(after)), fail_at_(fail_at), previous_(io::install_system_calls(this)) {}
  ~WatchedSteps() override { (void)io::install_system_calls(previous_); }
  WatchedSteps(const WatchedSteps&) = delete;
  WatchedSteps& operator=(const WatchedSteps&) = delete;

  int rename(const char* from, const char* to) override {
    return step(to, [&] { return SystemCalls::rename(from, to); });
  }
  int unlink(const char* path) override {
    return step(path, [&] { return SystemCalls::unlink(path); });
  }

 private:
  int step(const char* changed, const std::function<int()>& call) {
    if (++steps_ == fail_at_) {
      errno = EIO;
      return -1;
    }
    const int result = call();
    if (result == 0 && after_) after_(changed);
    return result;
  }

  std::function<void(const std::filesystem::path&)> after_;
  int fail_at_;
  int steps_ = 0;
  io::SystemCalls* previous_;
};

}  // namespace onnxmap::test
