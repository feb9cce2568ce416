// load_to_device (device.hpp, device_load.hpp).

#include "device/device_load.hpp"

#include <algorithm>
#include <charconv>
#include <string>

#include "device/cuda_engine.hpp"
#include "device/host_engine.hpp"
#include "device/ring_memory.hpp"
#include "load/load_loop.hpp"
#include "load/load_plan.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::detail {

namespace {

// Null destinations of items with bytes, and the device's room for the plan, before any read.
void check_targets(const LoadPlan& plan, DeviceTargets targets, CopyEngine& engine) {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    total += plan.items[i].length;
    if (targets.buffer_for == nullptr && targets.pointers[i] == nullptr &&
        plan.items[i].length > 0) {
      throw Error(ErrorKind::invalid_argument,
                  "a null destination for " + std::to_string(plan.items[i].length) + " bytes",
                  Error::kNoOffset, plan.items[i].load_item->tensor.path());
    }
  }
  if (targets.buffer_for == nullptr) return;
  const std::uint64_t free = engine.free_device_bytes();
  if (total > free) {
    throw Error(ErrorKind::device, "too little memory on " + engine.name() + ": the plan has " +
                                       std::to_string(total) + " bytes, " + std::to_string(free) +
                                       " are free");
  }
}

}  // namespace

std::unique_ptr<CopyEngine> make_copy_engine(std::string_view device) {
  if (device == "host") return std::make_unique<HostCopyEngine>();
  int ordinal = 0;
  if (device.starts_with("cuda:")) {
    const std::string_view digits = device.substr(5);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), ordinal);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() ||
        ordinal < 0) {
      ordinal = -1;
    }
  } else if (device != "cuda") {
    ordinal = -1;
  }
  if (ordinal < 0) {
    throw Error(ErrorKind::invalid_argument,
                "device '" + std::string(device) + "': expected cuda, cuda:N or host");
  }
  return std::make_unique<CudaCopyEngine>(ordinal);
}

DeviceLoadStats load_to_device(std::span<const LoadItem> items, DeviceTargets targets,
                               const DeviceLoadOptions& options, CopyEngine& engine) {
  const LoadClock clock;
  if (targets.buffer_for == nullptr && targets.pointers.size() != items.size()) {
    throw Error(ErrorKind::invalid_argument, std::to_string(items.size()) + " items but " +
                                                 std::to_string(targets.pointers.size()) +
                                                 " destinations");
  }
  // One plan of reads, as every load makes it, cut to the ring's slots; the destinations are
  // checked before anything is fetched or read.
  LoadPlan plan = resolve_plan(items, options.load.mode, Buffers::caller);
  check_targets(plan, targets, engine);
  const Ring ring = ring_for(plan, options);
  // Requests whose aligned range fits a slot, the load's gap rule, the page cache counted
  // (which requests are read buffered or registered).
  cut_reads(plan, {ring.slot_bytes, options.load.max_gap_bytes, true});
  DeviceLoadStats stats = DeviceSink::load(plan, ring, targets, options, engine);
  clock.stamp(stats);
  return stats;
}

}  // namespace onnxmap::detail

namespace onnxmap {

std::vector<StatsField> fields_of(const DeviceLoadStats& s) {
  std::vector<StatsField> fields = fields_of(static_cast<const LoadStats&>(s));
  fields.insert(fields.end(), {{"bytes_staged", s.bytes_staged},
                               {"bytes_registered", s.bytes_registered},
                               {"pinned_bytes", s.pinned_bytes},
                               {"registrations", s.registrations},
                               {"registrations_refused", s.registrations_refused},
                               {"threads", std::uint64_t{s.threads}},
                               {"path", s.path()}});
  return fields;
}

DeviceLoadStats load_to_device(std::span<const LoadItem> items, std::span<void* const> destinations,
                               const DeviceLoadOptions& options) {
  const auto engine = detail::make_copy_engine(options.device);
  return detail::load_to_device(items, {destinations, nullptr}, options, *engine);
}

DeviceLoadStats load_to_device(std::span<const LoadItem> items, const DeviceBufferFor& buffer_for,
                               const DeviceLoadOptions& options) {
  const auto engine = detail::make_copy_engine(options.device);
  return detail::load_to_device(items, {{}, &buffer_for}, options, *engine);
}

}  // namespace onnxmap

namespace onnxmap {

DeviceBuffer::DeviceBuffer(std::string_view device, std::uint64_t bytes) : size_(bytes) {
  const auto engine = detail::make_copy_engine(device);  // checks the name and the device
  const auto size = static_cast<std::size_t>(std::max<std::uint64_t>(bytes, 1));
  if (device == "host") {
    // Faulted in now, as device memory is usable once allocated, so the load's figures count
    // the copies and not the first touch of the destination.
    void* memory = detail::map_ring_memory(size);
    detail::populate(memory, size, true);
    memory_.reset(memory, [size](void* p) { detail::unmap_ring_memory(p, size); });
    return;
  }
  const detail::CudaRuntime& rt = detail::cudart();
  void* memory = nullptr;
  const detail::cuda::Status status = rt.malloc(&memory, size);
  if (status != detail::cuda::kSuccess) {
    (void)rt.get_last_error();
    throw Error(ErrorKind::device, rt.describe("cudaMalloc", status, engine->name()) + " for " +
                                       std::to_string(bytes) + " bytes");
  }
  memory_.reset(memory, [&rt](void* p) { (void)rt.free(p); });
}

}  // namespace onnxmap
