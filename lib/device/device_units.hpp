#pragma once
// The device loader's work (device.hpp), taken from the loader's plan (load_plan.hpp) as it is:
// units taken by the workers in file order, each a request of the plan (cut so that its aligned
// range fits a slot of the ring, ring_cut) with the way it goes to the device, or one item whose
// bytes are in memory or decoded.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "load/load_plan.hpp"
#include "onnxmap/device.hpp"

namespace onnxmap::detail {

enum class UnitKind : std::uint8_t {
  staged,      // a request read into the worker's slot (LoadRun::reader: buffered where the plan
               // found it resident, else by the load's mode), copied from there
  registered,  // a request's pages registered and copied from directly (staged if refused)
  memory,      // one item from memory or typed fields, staged through the slot in parts
};

struct Unit {
  UnitKind kind = UnitKind::staged;
  std::size_t index = 0;  // staged, registered: into LoadPlan::requests; memory: into items
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
// How a device load cuts its plan (cut_reads): requests whose aligned range fits a slot, the
// load's gap rule, the page cache counted (which requests are read buffered or registered).
[[nodiscard]] ReadCut ring_cut(const Ring& ring, const LoadOptions& options) noexcept;

// How requests go: the load's options and its engine's preference.
struct UnitPolicy {
  DevicePath path = DevicePath::automatic;
  LoadMode mode = LoadMode::direct;
  bool prefer_registration = false;  // CopyEngine::prefers_registration()
};

// A unit for every request of `plan`, in its order, then one for every item with bytes not
// streamed. A request is `registered` by DevicePath::registered, or for DevicePath::automatic in
// map mode or where it is resident and the engine prefers registering; else `staged`.
[[nodiscard]] std::vector<Unit> make_units(const LoadPlan& plan, const UnitPolicy& policy);

}  // namespace onnxmap::detail
