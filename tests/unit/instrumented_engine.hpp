#pragma once
// The host copy engine as the tests drive it, built into the tests only: failures injected, the
// CUDA engine's choice imitated, and what is pinned and registered counted, now and at most.

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>

#include "device/host_engine.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::test {

class InstrumentedEngine final : public detail::HostCopyEngine {
 public:
  // The `n`-th copy queued from now on (1 = the next) fails: it is not made, and the next
  // synchronize() of its stream throws onnxmap::Error (device), as a CUDA copy's failure is
  // reported. 0: none.
  void fail_copy_at(std::uint64_t n) noexcept { fail_at_ = copies_ + n; }
  // Every registration refused, as a driver may refuse it.
  void refuse_registration(bool refuse) noexcept { refuse_registration_ = refuse; }
  // false chooses as the CUDA engine does: the paths the GPU takes, tested without one.
  void prefer_registration(bool prefer) noexcept { prefers_registration_ = prefer; }
  void set_free_device_bytes(std::uint64_t bytes) noexcept { free_bytes_ = bytes; }

  [[nodiscard]] std::uint64_t pinned_now() const { return read(pinned_.now); }
  [[nodiscard]] std::uint64_t pinned_peak() const { return read(pinned_.peak); }
  [[nodiscard]] std::uint64_t registered_now() const { return read(registered_.now); }
  [[nodiscard]] std::uint64_t registered_peak() const { return read(registered_.peak); }

  void* alloc_pinned(std::size_t bytes) override {
    void* host = HostCopyEngine::alloc_pinned(bytes);
    add(pinned_, host, bytes);
    return host;
  }
  void free_pinned(void* host) noexcept override {
    HostCopyEngine::free_pinned(host);
    remove(pinned_, host);
  }
  bool register_host(const void* host, std::size_t bytes) override {
    if (refuse_registration_ || !HostCopyEngine::register_host(host, bytes)) return false;
    add(registered_, host, bytes);
    return true;
  }
  void unregister_host(const void* host) noexcept override {
    HostCopyEngine::unregister_host(host);
    remove(registered_, host);
  }
  void copy_async(void* device, const void* host, std::size_t bytes, unsigned stream) override {
    if (++copies_ != fail_at_) {
      HostCopyEngine::copy_async(device, host, bytes, stream);
      return;
    }
    const std::lock_guard lock(lock_);
    failed_streams_.insert(stream);
  }
  void synchronize(unsigned stream) override {
    HostCopyEngine::synchronize(stream);
    const std::lock_guard lock(lock_);
    if (failed_streams_.erase(stream) > 0) {
      throw Error(ErrorKind::device, "injected copy failure on host");
    }
  }
  void drain(unsigned stream) noexcept override {
    HostCopyEngine::drain(stream);
    const std::lock_guard lock(lock_);
    failed_streams_.erase(stream);
  }
  [[nodiscard]] std::uint64_t free_device_bytes() override { return free_bytes_; }
  [[nodiscard]] bool prefers_registration() const noexcept override {
    return prefers_registration_;
  }

 private:
  struct Held {
    std::map<const void*, std::size_t> sizes;
    std::uint64_t now = 0;
    std::uint64_t peak = 0;
  };
  void add(Held& held, const void* p, std::size_t bytes) {
    const std::lock_guard lock(lock_);
    held.sizes[p] = bytes;
    held.now += bytes;
    held.peak = std::max(held.peak, held.now);
  }
  void remove(Held& held, const void* p) noexcept {
    const std::lock_guard lock(lock_);
    const auto found = held.sizes.find(p);
    if (found == held.sizes.end()) return;
    held.now -= found->second;
    held.sizes.erase(found);
  }
  [[nodiscard]] std::uint64_t read(const std::uint64_t& value) const {
    const std::lock_guard lock(lock_);
    return value;
  }

  std::atomic<std::uint64_t> copies_{0};
  std::atomic<std::uint64_t> fail_at_{0};
  std::atomic<bool> refuse_registration_{false};
  bool prefers_registration_ = true;
  std::atomic<std::uint64_t> free_bytes_{UINT64_MAX};
  mutable std::mutex lock_;
  Held pinned_;                        // guarded by lock_
  Held registered_;                    // guarded by lock_
  std::set<unsigned> failed_streams_;  // guarded by lock_
};

}  // namespace onnxmap::test
