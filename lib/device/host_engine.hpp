#pragma once
// The host-memory copy engine (copy_engine.hpp), device "host": the "device" is host memory,
// each stream a worker thread running its copies in order, so that the device loader (ordering,
// budgets, errors, cancellation) runs, and is tested, on every machine. Not final: the tests
// derive an engine from it that injects failures and counts what is pinned and registered
// (tests/unit/instrumented_engine.hpp); nothing of theirs is in the library.

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

class HostCopyEngine : public CopyEngine {
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
  // Host memory is not counted: the kernel's overcommit decides what an allocation gets.
  [[nodiscard]] std::uint64_t free_device_bytes() override { return UINT64_MAX; }
  // Registering is free here, and copying from the mapping is one copy where the ring makes two.
  [[nodiscard]] bool prefers_registration() const noexcept override { return true; }

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
  std::mutex memory_lock_;
  std::map<const void*, std::size_t> pinned_;      // guarded by memory_lock_: sizes to unmap
  std::map<const void*, std::size_t> registered_;  // guarded by memory_lock_: overlaps refused
};

}  // namespace onnxmap::detail
