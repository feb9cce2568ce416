#pragma once
// The device loader's choices (device.hpp) over the loader's plan (load_plan.hpp) as it is: its
// workers and ring, how the plan is cut (each request's aligned range fits a slot of the ring),
// and the way each request goes to the device. The items not streamed (bytes in memory, decoded)
// are the load loop's units too, staged through the ring (device_sink.hpp).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "load/load_plan.hpp"
#include "onnxmap/device.hpp"

namespace onnxmap::detail {

// How a request goes to the device.
enum class RequestPath : std::uint8_t {
  staged,      // read into the worker's slot (LoadLoop::reader: buffered where the plan found it
               // resident, else by the load's mode), copied from there
  registered,  // its pages registered and copied from directly (staged if refused)
};

// The workers of a load whose DeviceLoadOptions::load.threads is 0, from the plan's streamed
// items (counted in windows of nearby items, ResidentWindows). Measured on an H100 with 16 cores
// (bench/gpu-sweep.md): the ring copying out of the page cache is CPU-bound and ran at 14, 22
// and 31 GB/s on 4, 8 and 16 workers, so a plan mostly resident gets one per core, at most
// kMaxDeviceThreads; reads from the disk and registrations went no faster on more than 4, and
// 16 workers spent 3 times the CPU of 4 on a cold load, so other plans get kDiskDeviceThreads.
inline constexpr unsigned kDiskDeviceThreads = 4;
[[nodiscard]] unsigned automatic_threads(const LoadPlan& plan, DevicePath path, LoadMode mode);

// The load's workers and each one's slot of the pinned ring (max_in_flight_bytes / threads,
// page-aligned), from a plan resolved but not yet cut (resolve_plan).
struct Ring {
  unsigned threads = 1;
  std::uint64_t slot_bytes = 0;
};
[[nodiscard]] Ring ring_for(const LoadPlan& plan, const DeviceLoadOptions& options);

// How requests go: the load's options and its engine's preference.
struct PathPolicy {
  DevicePath path = DevicePath::automatic;
  LoadMode mode = LoadMode::direct;
  bool prefer_registration = false;  // CopyEngine::prefers_registration()
};

// The path of every request of `plan`, in its order: `registered` by DevicePath::registered, or
// for DevicePath::automatic in map mode or where it is resident and the engine prefers
// registering; else `staged`.
[[nodiscard]] std::vector<RequestPath> request_paths(const LoadPlan& plan,
                                                     const PathPolicy& policy);

}  // namespace onnxmap::detail
