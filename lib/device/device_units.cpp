// The device loader's units (device_units.hpp).

#include "device/device_units.hpp"

#include <algorithm>
#include <cstdint>
#include <thread>

#include "io/file_reader.hpp"
#include "load/resident_plan.hpp"

namespace onnxmap::detail {

namespace {

// Whether every request is registered: by request, or in map mode.
bool registers(DevicePath path, LoadMode mode) {
  return path == DevicePath::registered || (path == DevicePath::automatic && mode == LoadMode::map);
}

// How a request goes. A resident one is registered automatically only where the engine prefers
// it (CopyEngine::prefers_registration: not CUDA, measured on an H100, where the ring read warm
// pages at 22 GB/s on 8 threads and 27-31 GB/s on 16 and registering ran at 12-15 GB/s
// whatever the threads, holding up the other workers' copies while it ran).
RequestPath path_of(const Request& request, const PathPolicy& policy) {
  if (registers(policy.path, policy.mode)) return RequestPath::registered;
  const bool automatic = policy.path == DevicePath::automatic;
  return request.resident && automatic && policy.prefer_registration ? RequestPath::registered
                                                                     : RequestPath::staged;
}

}  // namespace

unsigned automatic_threads(const LoadPlan& plan, DevicePath path, LoadMode mode) {
  if (registers(path, mode)) return kDiskDeviceThreads;
  ResidentWindows windows;
  // A remote model's bytes are fetched into its mirror, through the page cache, before any
  // worker reads them (cut_reads): resident by then.
  std::uint64_t fetched = 0;
  for (const std::size_t i : plan.streamed) {
    const ResolvedItem& item = plan.items[i];
    const PlanFile& file = plan.files[item.file];
    if (file.fetcher != nullptr) {
      fetched += item.length;
      continue;
    }
    (void)windows.add(*file.file, item.offset, item.offset + item.length);
  }
  (void)windows.finish();
  if ((windows.resident_bytes() + fetched) * 2 < windows.counted_bytes() + fetched) {
    return kDiskDeviceThreads;
  }
  return std::clamp(std::thread::hardware_concurrency(), 1U, kMaxDeviceThreads);
}

Ring ring_for(const LoadPlan& plan, const DeviceLoadOptions& options) {
  const CommonLoadOptions& load = options.load;
  Ring ring;
  ring.threads = load.threads > 0 ? load.threads : automatic_threads(plan, options.path, load.mode);
  ring.slot_bytes =
      std::max(io::kDirectAlign, io::align_down(load.max_in_flight_bytes / ring.threads));
  return ring;
}

std::vector<RequestPath> request_paths(const LoadPlan& plan, const PathPolicy& policy) {
  std::vector<RequestPath> paths;
  paths.reserve(plan.requests.size());
  for (const Request& request : plan.requests) paths.push_back(path_of(request, policy));
  return paths;
}

}  // namespace onnxmap::detail
