// The CUDA copy engine (cuda_engine.hpp).

#include "device/cuda_engine.hpp"

#include "device/ring_memory.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::detail {

CudaCopyEngine::CudaCopyEngine(int ordinal)
    : rt_(&cudart()), ordinal_(ordinal), name_("cuda:" + std::to_string(ordinal)) {
  int count = 0;
  check("cudaGetDeviceCount", rt_->get_device_count(&count));
  if (ordinal_ >= count) {
    throw Error(ErrorKind::device, name_ + ": this machine has " + std::to_string(count) +
                                       " CUDA devices (runtime " + rt_->path + ")");
  }
  bind_thread();
}

CudaCopyEngine::~CudaCopyEngine() {
  for (const cuda::Stream stream : streams_) (void)rt_->stream_destroy(stream);
}

void CudaCopyEngine::check(const char* call, cuda::Status status) const {
  if (status == cuda::kSuccess) return;
  (void)rt_->get_last_error();  // clears a non-sticky error for the calls after this one
  throw Error(ErrorKind::device, rt_->describe(call, status, name_));
}

void CudaCopyEngine::make_streams(unsigned count) {
  for (unsigned i = 0; i < count; ++i) {
    cuda::Stream stream = nullptr;
    check("cudaStreamCreateWithFlags",
          rt_->stream_create_with_flags(&stream, cuda::kStreamNonBlocking));
    streams_.push_back(stream);
  }
}

void CudaCopyEngine::bind_thread() {
  check("cudaSetDevice", rt_->set_device(ordinal_));
}

// Huge-page memory registered with the driver (ring_memory.hpp); where the driver refuses to
// register it, cudaHostAlloc's memory instead.
void* CudaCopyEngine::alloc_pinned(std::size_t bytes) {
  void* host = map_ring_memory(bytes);
  if (rt_->host_register(host, bytes, cuda::kHostRegisterDefault) == cuda::kSuccess) {
    const std::lock_guard lock(ring_lock_);
    ring_[host] = bytes;
    return host;
  }
  (void)rt_->get_last_error();
  unmap_ring_memory(host, bytes);
  host = nullptr;
  check("cudaHostAlloc", rt_->host_alloc(&host, bytes, cuda::kHostAllocDefault));
  return host;
}

void CudaCopyEngine::free_pinned(void* host) noexcept {
  if (host == nullptr) return;
  std::size_t mapped = 0;
  {
    const std::lock_guard lock(ring_lock_);
    const auto found = ring_.find(host);
    if (found != ring_.end()) {
      mapped = found->second;
      ring_.erase(found);
    }
  }
  if (mapped == 0) {
    (void)rt_->free_host(host);
    return;
  }
  (void)rt_->host_unregister(host);
  unmap_ring_memory(host, mapped);
}

// The runtime's pointer is not const, but a read-only registration never writes through it.
bool CudaCopyEngine::register_host(const void* host, std::size_t bytes) {
  const cuda::Status status =
      rt_->host_register(const_cast<void*>(host), bytes, cuda::kHostRegisterReadOnly);
  if (status == cuda::kSuccess) return true;
  (void)rt_->get_last_error();
  return false;
}

void CudaCopyEngine::unregister_host(const void* host) noexcept {
  (void)rt_->host_unregister(const_cast<void*>(host));
}

void CudaCopyEngine::copy_async(void* device, const void* host, std::size_t bytes,
                                unsigned stream) {
  check("cudaMemcpyAsync",
        rt_->memcpy_async(device, host, bytes, cuda::kMemcpyHostToDevice, streams_.at(stream)));
}

void CudaCopyEngine::synchronize(unsigned stream) {
  check("cudaStreamSynchronize", rt_->stream_synchronize(streams_.at(stream)));
}

void CudaCopyEngine::drain(unsigned stream) noexcept {
  if (stream < streams_.size()) (void)rt_->stream_synchronize(streams_[stream]);
  (void)rt_->get_last_error();
}

std::uint64_t CudaCopyEngine::free_device_bytes() {
  std::size_t free = 0;
  std::size_t total = 0;
  check("cudaMemGetInfo", rt_->mem_get_info(&free, &total));
  return free;
}

}  // namespace onnxmap::detail
