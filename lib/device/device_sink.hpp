#pragma once
// The device sink (load/load_sink.hpp): a load whose bytes end in device memory, through a copy
// engine (copy_engine.hpp). Each of the load loop's workers has a stream and a slot of the
// pinned ring of its own; a staged request is read into the slot and copied from there, a
// registered one copied from the registered mapping, an item in memory (or decoded) staged
// through the slot in parts; a slot is reused once its stream has finished the copies out of
// it, and bytes land (LoadLoop::land) when their copies are done.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "device/copy_engine.hpp"
#include "device/device_units.hpp"
#include "load/load_loop.hpp"
#include "load/load_plan.hpp"
#include "load/load_sink.hpp"
#include "onnxmap/device.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::detail {

// Where items go: a pointer each, or one asked of buffer_for when the item is scheduled.
struct DeviceTargets {
  std::span<void* const> pointers;
  const DeviceBufferFor* buffer_for = nullptr;
};

class DeviceSink final : public LoadSink {
 public:
  // Runs the load of `plan` (cut to the ring's slots, so that every request's aligned range
  // fits a slot) on `engine`, whose streams it makes: the stats but seconds and CPU time.
  // Throws the first failure.
  static DeviceLoadStats load(const LoadPlan& plan, const Ring& ring, DeviceTargets targets,
                              const DeviceLoadOptions& options, CopyEngine& engine);

  [[nodiscard]] bool stages_unstreamed() const noexcept override { return true; }
  void deliver_unstreamed(std::size_t item) override;  // only items of no bytes come here
  [[nodiscard]] unsigned start(std::size_t units) override;
  void claim(const LoadUnit& unit) override;  // asks for the destinations
  [[nodiscard]] std::unique_ptr<Worker> worker(unsigned index) override;

 private:
  class Stream;

  DeviceSink(const LoadPlan& plan, const Ring& ring, DeviceTargets targets,
             const DeviceLoadOptions& options, CopyEngine& engine, LoadLoop& loop);

  void schedule(std::size_t item);  // under the loop's lock
  // Hands each of one unit's `pieces` to options.on_piece once the bytes of its item before it
  // have passed (DeviceLoadOptions::on_piece): first those whose turn has come, then, waiting,
  // those whose item's earlier bytes another worker still holds (so that one tensor straddling
  // two requests does not hold up the hashing of the rest of the later one). Nothing where the
  // load has stopped meanwhile.
  struct PieceBytes {
    std::size_t item;
    std::uint64_t at;
    std::span<const std::byte> bytes;
  };
  void pass(std::span<const PieceBytes> pieces);
  // Passes `piece` if its turn has come (after waiting for it, with `wait`); false if not.
  bool pass_if_due(const PieceBytes& piece, bool wait);
  [[noreturn]] void throw_naming(const Error& e, std::size_t item) const;

  const LoadPlan& plan_;
  DeviceTargets targets_;
  CopyEngine& engine_;
  Ring ring_;  // the workers and each one's slot (ring_for), as the plan was cut for
  std::vector<RequestPath> paths_;      // per request
  std::vector<std::byte*> targets_of_;  // per item, once scheduled (under the loop's lock)
  const std::function<void(const LoadedPiece&)>& on_piece_;
  std::vector<std::uint64_t> passed_;  // per item, bytes through on_piece (under the loop's lock)
  LoadLoop& loop_;
  DeviceLoadStats stats_;  // the device's own fields, under the loop's lock
};

}  // namespace onnxmap::detail
