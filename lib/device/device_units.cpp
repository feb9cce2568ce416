// The device loader's units (device_units.hpp).

#include "device/device_units.hpp"

#include <algorithm>
#include <cstdint>
#include <thread>
#include <utility>

#include "load/resident_plan.hpp"

namespace onnxmap::detail {

namespace {

// Whether every streamed chunk is registered: by request, or in map mode.
bool registers(DevicePath path, LoadMode mode) {
  return path == DevicePath::registered || (path == DevicePath::automatic && mode == LoadMode::map);
}

// How a streamed chunk goes. A resident one is registered automatically only where the engine
// prefers it (CopyEngine::prefers_registration: not CUDA, measured on an H100, where the ring
// read warm pages at 22 GB/s on 8 threads and 27-31 GB/s on 16 and registering ran at 12-15
// GB/s whatever the threads, holding up the other workers' copies while it ran).
UnitKind kind_of(const LoadPlan& plan, const Unit& unit, const UnitPolicy& policy) {
  if (registers(policy.path, policy.mode)) return UnitKind::registered;
  const ByteRange span = span_of(unit);
  const bool resident = plan.files[unit.file].file->resident(span.offset, span.length);
  if (!resident) return UnitKind::ring;
  const bool automatic = policy.path == DevicePath::automatic;
  return automatic && policy.prefer_registration ? UnitKind::registered : UnitKind::cached;
}

}  // namespace

unsigned automatic_threads(const LoadPlan& plan, DevicePath path, LoadMode mode) {
  if (registers(path, mode)) return kDiskDeviceThreads;
  ResidentWindows windows;
  for (const std::size_t i : plan.streamed) {
    const ResolvedItem& item = plan.items[i];
    (void)windows.add(*plan.files[item.file].file, item.offset, item.offset + item.length);
  }
  (void)windows.finish();
  if (windows.resident_bytes() * 2 < windows.counted_bytes()) return kDiskDeviceThreads;
  return std::clamp(std::thread::hardware_concurrency(), 1U, kMaxDeviceThreads);
}

ByteRange span_of(const Unit& unit) noexcept {
  std::uint64_t begin = UINT64_MAX;
  std::uint64_t end = 0;
  for (const ReadPiece& piece : unit.pieces) {
    begin = std::min(begin, piece.offset);
    end = std::max(end, piece.offset + piece.length);
  }
  return {begin, end - begin};
}

std::vector<Unit> make_units(const LoadPlan& plan, std::uint64_t chunk_bytes,
                             const UnitPolicy& policy) {
  std::vector<Unit> units;
  for (const std::size_t i : plan.streamed) {
    const ResolvedItem& item = plan.items[i];
    for (std::uint64_t at = item.offset, end = item.offset + item.length; at < end;) {
      const std::uint64_t chunk = at / chunk_bytes * chunk_bytes;
      const std::uint64_t stop = std::min(end, chunk + chunk_bytes);
      if (units.empty() || units.back().kind == UnitKind::memory ||
          units.back().file != item.file || units.back().chunk != chunk) {
        units.push_back({UnitKind::ring, item.file, chunk, {}});
      }
      units.back().pieces.push_back({i, at, stop - at, at - item.offset});
      at = stop;
    }
  }
  for (Unit& unit : units) unit.kind = kind_of(plan, unit, policy);
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    const ResolvedItem& item = plan.items[i];
    if (item.source != ItemSource::stream && item.length > 0) {
      units.push_back({UnitKind::memory, 0, 0, {{i, 0, item.length, 0}}});
    }
  }
  return units;
}

}  // namespace onnxmap::detail
