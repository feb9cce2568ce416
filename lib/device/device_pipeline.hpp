#pragma once
// The device loader's pipeline (device.hpp): workers take units (device_units.hpp) in file
// order, each with a stream and a slot of the pinned ring of its own; a staged unit's request is
// read into the slot and copied from there, a registered one copied from the registered
// mapping; a slot is reused once its stream has finished the copies out of it. The calling thread
// reports progress, asks for cancellation and rethrows the first failure, through the LoadRun every
// load shares (load/load_run.hpp), which also holds the plan's files opened by the load's mode.

#include <cstdint>
#include <span>
#include <vector>

#include "device/copy_engine.hpp"
#include "device/device_units.hpp"
#include "io/file_reader.hpp"
#include "load/load_plan.hpp"
#include "load/load_run.hpp"
#include "onnxmap/device.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::detail {

// Where items go: a pointer each, or one asked of buffer_for when the item is scheduled.
struct DeviceTargets {
  std::span<void* const> pointers;
  const DeviceBufferFor* buffer_for = nullptr;
};

class DevicePipeline {
 public:
  // `plan` cut by ring_cut(ring, ...), so that every request's aligned range fits a slot.
  DevicePipeline(const LoadPlan& plan, const Ring& ring, DeviceTargets targets,
                 const DeviceLoadOptions& options, CopyEngine& engine);
  // Runs the load; the stats but seconds and CPU time. Throws the first failure.
  DeviceLoadStats run();

 private:
  struct Pending {
    std::size_t item;
    std::uint64_t bytes;
    bool staged;
  };
  class Worker;
  friend class Worker;

  void work(unsigned stream);
  [[nodiscard]] const Unit* take();
  void schedule(std::size_t item);  // under run_.lock
  void complete(std::vector<Pending>& pending);
  [[nodiscard]] bool report();
  [[nodiscard]] std::byte* target(std::size_t item) const;
  [[noreturn]] void throw_naming(const Error& e, std::size_t item) const;

  const LoadPlan& plan_;
  DeviceTargets targets_;
  const DeviceLoadOptions& options_;
  CopyEngine& engine_;
  Ring ring_;  // the workers and each one's slot (ring_for), as the plan was cut for
  std::vector<Unit> units_;
  std::vector<std::byte*> targets_of_;  // per item, once scheduled
  LoadRun run_;

  // Guarded by run_.lock:
  std::size_t next_unit_ = 0;
  std::vector<std::uint64_t> remaining_;  // per item, bytes not yet on the device
  std::uint64_t done_bytes_ = 0;
  std::uint64_t total_bytes_ = 0;
  std::size_t items_left_ = 0;
  unsigned running_ = 0;  // workers not yet finished
  DeviceLoadStats stats_;
};

}  // namespace onnxmap::detail
