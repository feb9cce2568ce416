// The device loader's units (device_units.hpp).

#include "device/device_units.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <thread>

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
  const FileSpan span = span_of(unit);
  const bool resident = plan.files[unit.file].file->resident(span.begin, span.end - span.begin);
  if (!resident) return UnitKind::ring;
  const bool automatic = policy.path == DevicePath::automatic;
  return automatic && policy.prefer_registration ? UnitKind::registered : UnitKind::cached;
}

// Streamed items' indices in file order.
std::vector<std::size_t> streamed_in_file_order(const LoadPlan& plan) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    if (plan.items[i].source == ItemSource::stream && plan.items[i].length > 0) {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::pair(plan.items[a].file, plan.items[a].offset) <
           std::pair(plan.items[b].file, plan.items[b].offset);
  });
  return order;
}

}  // namespace

// Items within kJoinGap of each other share one count of the page cache, up to kMaxWindow: a
// plan of many small tensors would otherwise make a system call each.
unsigned automatic_threads(const LoadPlan& plan, DevicePath path, LoadMode mode) {
  if (registers(path, mode)) return kDiskDeviceThreads;
  constexpr std::uint64_t kJoinGap = std::uint64_t{64} << 10U;
  constexpr std::uint64_t kMaxWindow = std::uint64_t{256} << 20U;
  std::uint64_t resident = 0;
  std::uint64_t streamed = 0;
  struct Window {
    std::size_t file = SIZE_MAX;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::uint64_t bytes = 0;  // of the items in it
  } window;
  const auto close = [&] {
    if (window.file != SIZE_MAX &&
        plan.files[window.file].file->resident(window.begin, window.end - window.begin)) {
      resident += window.bytes;
    }
  };
  for (const std::size_t i : streamed_in_file_order(plan)) {
    const ResolvedItem& item = plan.items[i];
    const std::uint64_t end = item.offset + item.length;
    streamed += item.length;
    if (item.file == window.file && item.offset <= window.end + kJoinGap &&
        end - window.begin <= kMaxWindow) {
      window.end = std::max(window.end, end);
      window.bytes += item.length;
      continue;
    }
    close();
    window = {item.file, item.offset, end, item.length};
  }
  close();
  if (resident * 2 < streamed) return kDiskDeviceThreads;
  return std::clamp(std::thread::hardware_concurrency(), 1U, kMaxDeviceThreads);
}

FileSpan span_of(const Unit& unit) noexcept {
  FileSpan span{UINT64_MAX, 0};
  for (const UnitPiece& piece : unit.pieces) {
    span.begin = std::min(span.begin, piece.offset);
    span.end = std::max(span.end, piece.offset + piece.length);
  }
  return span;
}

std::vector<Unit> make_units(const LoadPlan& plan, std::uint64_t chunk_bytes,
                             const UnitPolicy& policy) {
  std::vector<Unit> units;
  for (const std::size_t i : streamed_in_file_order(plan)) {
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
