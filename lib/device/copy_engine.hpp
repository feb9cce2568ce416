#pragma once
// A copy engine (device.hpp): what the device loader asks of a device. Copies are queued on
// streams and run asynchronously, in order within a stream; synchronize() waits for a stream
// and reports the first failure of the copies queued on it. Two engines: CUDA (the runtime
// loaded at run time) and host memory (a plain buffer as the "device", for machines without a
// GPU and for tests).

#include <cstddef>
#include <cstdint>
#include <string>

namespace onnxmap::detail {

class CopyEngine {
 public:
  CopyEngine() = default;
  CopyEngine(const CopyEngine&) = delete;
  CopyEngine& operator=(const CopyEngine&) = delete;
  virtual ~CopyEngine() = default;

  // The device as a user names it ("cuda:0", "host"), for messages.
  [[nodiscard]] virtual const std::string& name() const noexcept = 0;
  // Makes streams 0..count-1 (once, before any other call but name()).
  virtual void make_streams(unsigned count) = 0;
  // Called first on each thread that queues copies (CUDA: makes the device current).
  virtual void bind_thread() = 0;
  // Page-aligned host memory the device copies from at full speed. Throws onnxmap::Error.
  [[nodiscard]] virtual void* alloc_pinned(std::size_t bytes) = 0;
  virtual void free_pinned(void* host) noexcept = 0;
  // Registers [host, host + bytes) (page-aligned, read-only) for copies at full speed. False
  // where the device refuses (the caller stages the bytes instead); throws for no device.
  [[nodiscard]] virtual bool register_host(const void* host, std::size_t bytes) = 0;
  virtual void unregister_host(const void* host) noexcept = 0;
  // Queues a copy of `bytes` from host to device on `stream`. Throws onnxmap::Error (device)
  // when it cannot be queued; a failure of the copy itself comes from synchronize().
  virtual void copy_async(void* device, const void* host, std::size_t bytes, unsigned stream) = 0;
  // Waits for every copy queued on `stream`; throws onnxmap::Error (device) for the first that
  // failed since the last call.
  virtual void synchronize(unsigned stream) = 0;
  // The same, failures dropped: for cleanup on the way out of an error.
  virtual void drain(unsigned stream) noexcept = 0;
  // Device memory free now, in bytes.
  [[nodiscard]] virtual std::uint64_t free_device_bytes() = 0;
  // Whether DevicePath::automatic copies pages already in the page cache straight from the
  // registered mapping rather than through the ring. CUDA: no (registering ran at 12-17 GB/s
  // and held up other copies, bench/gpu-sweep.md). Host memory: yes (registering is free, and
  // copying from the mapping is one copy where the ring makes two).
  [[nodiscard]] virtual bool prefers_registration() const noexcept = 0;
};

// Pinned memory from `engine`, freed with it.
class PinnedMemory {
 public:
  PinnedMemory(CopyEngine& engine, std::size_t bytes)
      : engine_(&engine),
        data_(static_cast<std::byte*>(engine.alloc_pinned(bytes))),
        size_(bytes) {}
  PinnedMemory(const PinnedMemory&) = delete;
  PinnedMemory& operator=(const PinnedMemory&) = delete;
  ~PinnedMemory() { engine_->free_pinned(data_); }
  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  CopyEngine* engine_;
  std::byte* data_;
  std::size_t size_;
};

// A registration of host memory, undone (after `stream`'s copies from it) when it goes.
class Registration {
 public:
  Registration(CopyEngine& engine, const void* host, unsigned stream) noexcept
      : engine_(&engine), host_(host), stream_(stream) {}
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  ~Registration() {
    engine_->drain(stream_);
    engine_->unregister_host(host_);
  }

 private:
  CopyEngine* engine_;
  const void* host_;
  unsigned stream_;
};

}  // namespace onnxmap::detail
