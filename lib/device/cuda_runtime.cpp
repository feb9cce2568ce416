// The CUDA runtime loaded at run time (cuda_runtime.hpp).

#include "device/cuda_runtime.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <system_error>

#include "onnxmap/error.hpp"

namespace onnxmap::detail {

namespace {

namespace fs = std::filesystem;

constexpr const char* kNames[] = {"libcudart.so.13", "libcudart.so.12"};

// Folders that hold Python packages: the system's, the user's, a virtual or conda environment.
std::vector<fs::path> package_roots() {
  std::vector<fs::path> lib_dirs = {"/usr/lib", "/usr/local/lib"};
  for (const char* env : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    if (const char* v = std::getenv(env); v != nullptr && *v != '\0') lib_dirs.emplace_back(v);
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    lib_dirs.push_back(fs::path(home) / ".local" / "lib");
  }
  std::vector<fs::path> roots;
  for (fs::path dir : lib_dirs) {
    if (dir.filename() != "lib") dir /= "lib";
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.rfind("python3", 0) != 0) continue;
      roots.push_back(it->path() / "dist-packages");
      roots.push_back(it->path() / "site-packages");
    }
  }
  return roots;
}

template <class Fn>
void bind(void* handle, const char* symbol, Fn& fn, std::optional<std::string>& missing) {
  fn = reinterpret_cast<Fn>(dlsym(handle, symbol));  // NOLINT: dlsym's contract
  if (fn == nullptr && !missing) missing = symbol;
}

// Every entry point, or the first one missing.
std::optional<std::string> bind_all(void* h, CudaRuntime& rt) {
  std::optional<std::string> missing;
  bind(h, "cudaSetDevice", rt.set_device, missing);
  bind(h, "cudaGetDeviceCount", rt.get_device_count, missing);
  bind(h, "cudaStreamCreateWithFlags", rt.stream_create_with_flags, missing);
  bind(h, "cudaStreamDestroy", rt.stream_destroy, missing);
  bind(h, "cudaStreamSynchronize", rt.stream_synchronize, missing);
  bind(h, "cudaMemcpyAsync", rt.memcpy_async, missing);
  bind(h, "cudaHostAlloc", rt.host_alloc, missing);
  bind(h, "cudaFreeHost", rt.free_host, missing);
  bind(h, "cudaHostRegister", rt.host_register, missing);
  bind(h, "cudaHostUnregister", rt.host_unregister, missing);
  bind(h, "cudaMemGetInfo", rt.mem_get_info, missing);
  bind(h, "cudaMalloc", rt.malloc, missing);
  bind(h, "cudaFree", rt.free, missing);
  bind(h, "cudaGetLastError", rt.get_last_error, missing);
  bind(h, "cudaGetErrorString", rt.get_error_string, missing);
  return missing;
}

}  // namespace

std::string CudaRuntime::describe(const char* call, cuda::Status status,
                                  const std::string& device) const {
  const char* words = get_error_string != nullptr ? get_error_string(status) : nullptr;
  return std::string(call) + " failed on " + device + ": " +
         (words != nullptr ? words : "unknown error") + " (error " + std::to_string(status) + ")";
}

std::vector<std::string> cudart_candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("ONNXMAP_CUDART"); env != nullptr && *env != '\0') {
    out.emplace_back(env);
  }
  for (const char* name : kNames) out.emplace_back(name);
  for (const char* dir : {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
                          "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/opt/cuda/lib64"}) {
    for (const char* name : kNames) out.push_back(std::string(dir) + "/" + name);
  }
  // CUDA 13's wheels put every library in nvidia/cu13/lib; CUDA 12's, one folder per package.
  for (const fs::path& root : package_roots()) {
    for (const char* folder : {"cu13", "cuda_runtime"}) {
      const fs::path lib = root / "nvidia" / folder / "lib";
      for (const char* name : kNames) {
        std::error_code ec;
        if (fs::exists(lib / name, ec)) out.push_back((lib / name).string());
      }
    }
  }
  return out;
}

CudaRuntime load_cudart(std::span<const std::string> candidates) {
  std::string tried;
  for (const std::string& path : candidates) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      tried += (tried.empty() ? " " : "; ") +
               std::string(why != nullptr ? why : path + ": cannot be opened");
      continue;
    }
    CudaRuntime rt;
    rt.path = path;
    if (const auto missing = bind_all(handle, rt)) {
      tried += (tried.empty() ? " " : "; ") + path + ": has no " + *missing;
      (void)dlclose(handle);
      continue;
    }
    return rt;  // stays loaded: the runtime does not like being unloaded
  }
  throw Error(ErrorKind::device,
              "no CUDA runtime found (libcudart.so.13 or .12; set ONNXMAP_CUDART to its path); "
              "looked for (in order):" +
                  (tried.empty() ? std::string(" nothing") : tried));
}

const CudaRuntime& cudart() {
  static std::mutex lock;
  static std::optional<CudaRuntime> loaded;
  const std::lock_guard guard(lock);
  if (!loaded) loaded = load_cudart(cudart_candidates());
  return *loaded;
}

}  // namespace onnxmap::detail
