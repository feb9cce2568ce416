#pragma once
// The host-memory copy engine (copy_engine.hpp): the "device" is host memory, each stream a
// worker thread running its copies in order, so that the device loader's pipeline (ordering,
// budgets, errors, cancellation) runs, and is tested, on every machine. Tests inject failures
// and watch what is pinned and registered.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device/copy_engine.hpp"

namespace onnxmap::detail {

class HostCopyEngine final : public CopyEngine {
 public:
  HostCopyEngine() = default;
  ~HostCopyEngine() override;

  [[nodiscard]] const std::string& name() const noexcept override { return name_; }
  void make_streams(unsigned count) override;
  void bind_thread() override {}
  [[nodiscard]] void* alloc_pinned(std::size_t bytes) override;
  void free_pinned(void* host) noexcept override;
  [[nodiscard]] bool register_host(const void* host, std::size_t bytes) override;
  void unregister_host(const void* host) noexcept override;
  void copy_async(void* device, const void* host, std::size_t bytes, unsigned stream) override;
  void synchronize(unsigned stream) override;
  void drain(unsigned stream) noexcept override;
  [[nodiscard]] std::uint64_t free_device_bytes() override { return free_bytes_; }
  [[nodiscard]] bool prefers_registration() const noexcept override {
    return prefers_registration_;
  }

  // Test hooks. The `n`-th copy queued from now on (1 = the next) fails when it runs; 0: none.
  void fail_copy_at(std::uint64_t n) noexcept { fail_at_ = copies_ + n; }
  void refuse_registration(bool refuse) noexcept { refuse_registration_ = refuse; }
  // Chooses as the CUDA engine does (false): the paths the GPU takes, tested without one.
  void prefer_registration(bool prefer) noexcept { prefers_registration_ = prefer; }
  void set_free_device_bytes(std::uint64_t bytes) noexcept { free_bytes_ = bytes; }
  // Bytes pinned or registered now, and the most pinned at once.
  [[nodiscard]] std::uint64_t pinned_now() const;
  [[nodiscard]] std::uint64_t pinned_peak() const;
  [[nodiscard]] std::uint64_t registered_now() const;
  [[nodiscard]] std::uint64_t registered_peak() const;

 private:
  struct Stream {
    std::mutex lock;
    std::condition_variable changed;
    std::deque<std::function<void()>> queue;
    bool busy = false;
    bool stop = false;
    std::exception_ptr failure;
    std::thread thread;
  };
  void run(Stream& stream);
  Stream& stream_at(unsigned stream);

  std::string name_ = "host";
  std::vector<std::unique_ptr<Stream>> streams_;
  std::atomic<std::uint64_t> copies_{0};
  std::atomic<std::uint64_t> fail_at_{0};
  std::atomic<bool> refuse_registration_{false};
  bool prefers_registration_ = true;
  std::atomic<std::uint64_t> free_bytes_{UINT64_MAX};
  mutable std::mutex memory_lock_;
  std::map<const void*, std::size_t> pinned_;      // guarded by memory_lock_
  std::map<const void*, std::size_t> registered_;  // guarded by memory_lock_
  std::uint64_t pinned_bytes_ = 0;
  std::uint64_t pinned_peak_ = 0;
  std::uint64_t registered_bytes_ = 0;
  std::uint64_t registered_peak_ = 0;
};

}  // namespace onnxmap::detail
