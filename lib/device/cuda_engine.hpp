#pragma once
// The CUDA copy engine (copy_engine.hpp): streams of one device, pinned memory (huge pages
// registered with the driver, else cudaHostAlloc's), read-only registrations of mapped files,
// asynchronous host-to-device copies. The runtime is loaded at run time (cuda_runtime.hpp).

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "device/copy_engine.hpp"
#include "device/cuda_runtime.hpp"

namespace onnxmap::detail {

class CudaCopyEngine final : public CopyEngine {
 public:
  // Loads the runtime and makes device `ordinal` current. Throws onnxmap::Error (device) when
  // no runtime is found or the device cannot be used.
  explicit CudaCopyEngine(int ordinal);
  ~CudaCopyEngine() override;

  [[nodiscard]] const std::string& name() const noexcept override { return name_; }
  void make_streams(unsigned count) override;
  void bind_thread() override;
  [[nodiscard]] void* alloc_pinned(std::size_t bytes) override;
  void free_pinned(void* host) noexcept override;
  [[nodiscard]] bool register_host(const void* host, std::size_t bytes) override;
  void unregister_host(const void* host) noexcept override;
  void copy_async(void* device, const void* host, std::size_t bytes, unsigned stream) override;
  void synchronize(unsigned stream) override;
  void drain(unsigned stream) noexcept override;
  [[nodiscard]] std::uint64_t free_device_bytes() override;
  [[nodiscard]] bool prefers_registration() const noexcept override { return false; }

 private:
  // Throws onnxmap::Error (device) naming `call` and this device unless `status` is success.
  void check(const char* call, cuda::Status status) const;

  const CudaRuntime* rt_;
  int ordinal_;
  std::string name_;
  std::vector<cuda::Stream> streams_;
  std::mutex ring_lock_;
  std::map<const void*, std::size_t> ring_;  // registered ring memory and its size; ring_lock_
};

}  // namespace onnxmap::detail
