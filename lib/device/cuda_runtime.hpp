#pragma once
// The CUDA runtime, loaded at run time (dlopen), so that onnxmap builds and runs without CUDA:
// the few entry points the CUDA copy engine calls, declared here with the runtime's documented
// signatures and constants.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace onnxmap::detail {

namespace cuda {
using Status = int;             // cudaError_t; 0 is cudaSuccess
using Stream = struct Opaque*;  // cudaStream_t
inline constexpr Status kSuccess = 0;
inline constexpr unsigned kStreamNonBlocking = 0x01;
inline constexpr unsigned kHostAllocDefault = 0x00;
inline constexpr unsigned kHostRegisterDefault = 0x00;
inline constexpr unsigned kHostRegisterReadOnly = 0x08;
inline constexpr int kMemcpyHostToDevice = 1;
}  // namespace cuda

struct CudaRuntime {
  std::string path;  // the library as it was opened
  cuda::Status (*set_device)(int) = nullptr;
  cuda::Status (*get_device_count)(int*) = nullptr;
  cuda::Status (*stream_create_with_flags)(cuda::Stream*, unsigned) = nullptr;
  cuda::Status (*stream_destroy)(cuda::Stream) = nullptr;
  cuda::Status (*stream_synchronize)(cuda::Stream) = nullptr;
  cuda::Status (*memcpy_async)(void*, const void*, std::size_t, int, cuda::Stream) = nullptr;
  cuda::Status (*host_alloc)(void**, std::size_t, unsigned) = nullptr;
  cuda::Status (*free_host)(void*) = nullptr;
  cuda::Status (*host_register)(void*, std::size_t, unsigned) = nullptr;
  cuda::Status (*host_unregister)(void*) = nullptr;
  cuda::Status (*mem_get_info)(std::size_t*, std::size_t*) = nullptr;
  cuda::Status (*malloc)(void**, std::size_t) = nullptr;
  cuda::Status (*free)(void*) = nullptr;
  cuda::Status (*get_last_error)() = nullptr;
  const char* (*get_error_string)(cuda::Status) = nullptr;

  // "cudaMemcpyAsync failed on cuda:0: <the runtime's words> (error N)".
  [[nodiscard]] std::string describe(const char* call, cuda::Status status,
                                     const std::string& device) const;
};

// Where the runtime is looked for, in order: $ONNXMAP_CUDART when set, then libcudart.so.13
// and .12 by name (the loader's search path), the CUDA toolkit's usual folders, and the copy
// that PyTorch's pip wheels bundle (nvidia/cu13/lib, or CUDA 12's nvidia/cuda_runtime/lib, of a
// site-packages folder).
[[nodiscard]] std::vector<std::string> cudart_candidates();

// Opens the first of `candidates` that loads and has every entry point. Throws onnxmap::Error
// (device) naming every candidate tried and why each failed.
[[nodiscard]] CudaRuntime load_cudart(std::span<const std::string> candidates);

// load_cudart(cudart_candidates()), once per process on success (a failure is tried again on
// the next call). The library stays loaded.
[[nodiscard]] const CudaRuntime& cudart();

}  // namespace onnxmap::detail
