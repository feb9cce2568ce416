#pragma once
// The device loader's work (device.hpp), cut from the loader's plan (load_plan.hpp): units
// taken by the workers in file order, each a chunk of a file (aligned, at most one ring slot)
// with the pieces of items in it (the loader's ReadPiece), or one item whose bytes are in
// memory or decoded.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "load/load_plan.hpp"
#include "onnxmap/byte_range.hpp"
#include "onnxmap/device.hpp"

namespace onnxmap::detail {

enum class UnitKind : std::uint8_t {
  ring,        // read into the worker's slot (by the load's mode), copied from there
  cached,      // resident in the page cache: read into the slot buffered, whatever the mode
  registered,  // the mapping registered and copied from directly (the ring if refused)
  memory,      // one item from memory or typed fields, staged through the slot in parts
};

struct Unit {
  UnitKind kind = UnitKind::ring;
  std::size_t file = 0;           // ring, registered: index into LoadPlan::files
  std::uint64_t chunk = 0;        // ring, registered: the aligned file offset the chunk starts at
  std::vector<ReadPiece> pieces;  // in file order; memory: one, the whole item
};

// The bytes of the file that a ring or registered unit's pieces cover, first to last.
[[nodiscard]] ByteRange span_of(const Unit& unit) noexcept;

// The workers of a load whose DeviceLoadOptions::load.threads is 0, from the plan's streamed
// items (counted in windows of nearby items, ResidentWindows). Measured on an H100 with 16 cores
// (bench/gpu-sweep.md): the ring copying out of the page cache is CPU-bound and ran at 14, 22
// and 31 GB/s on 4, 8 and 16 workers, so a plan mostly resident gets one per core, at most
// kMaxDeviceThreads; reads from the disk and registrations went no faster on more than 4, and
// 16 workers spent 3 times the CPU of 4 on a cold load, so other plans get kDiskDeviceThreads.
inline constexpr unsigned kDiskDeviceThreads = 4;
[[nodiscard]] unsigned automatic_threads(const LoadPlan& plan, DevicePath path, LoadMode mode);

// How streamed chunks go: the load's options and its engine's preference.
struct UnitPolicy {
  DevicePath path = DevicePath::automatic;
  LoadMode mode = LoadMode::direct;
  bool prefer_registration = false;  // CopyEngine::prefers_registration()
};

// Units for every item of `plan` with bytes, the streamed ones in file order in chunks of
// `chunk_bytes` (a multiple of the page size), memory ones after. Streamed chunks are
// `registered` by DevicePath::registered, or for DevicePath::automatic in map mode or where
// their pages are resident and the engine prefers registering; else `cached` where their pages
// are resident (O_DIRECT would read them from the disk again), else `ring`.
[[nodiscard]] std::vector<Unit> make_units(const LoadPlan& plan, std::uint64_t chunk_bytes,
                                           const UnitPolicy& policy);

}  // namespace onnxmap::detail
