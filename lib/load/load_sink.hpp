#pragma once
// Where a load's bytes go (load_loop.hpp runs every load through one): the memory sink puts
// them in library or caller buffers or the map (load, load_into, prefetch: load/memory_sink.hpp),
// the device sink stages them through a pinned ring and copies them to a device through a copy
// engine (load_to_device: device/device_sink.hpp). The loop owns the order of the work, what
// has landed, delivery, progress, cancellation and failure; a sink owns its destinations, its
// budget and how a unit's bytes are moved.

#include <cstddef>
#include <cstdint>
#include <memory>

namespace onnxmap::detail {

// One piece of work for a sink's worker: a request of the plan (LoadPlan::requests), or an item
// the plan does not stream (bytes in memory, typed fields) for a sink that stages those.
struct LoadUnit {
  enum class Of : std::uint8_t { request, item };
  Of of = Of::request;
  std::size_t index = 0;  // into LoadPlan::requests or LoadPlan::items
};

class LoadSink {
 public:
  // What runs units on one of the loop's threads, made on that thread. Its destructor runs
  // there too, also on the way out of an error (the device's waits for its copies).
  class Worker {
   public:
    Worker() = default;
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;
    virtual ~Worker() = default;
    // Moves the unit's bytes and reports them to the loop (LoadLoop::land, complete) as they
    // land. Throws to stop the load.
    virtual void run(const LoadUnit& unit) = 0;
    // After the last unit: reports what is still in flight (the device's last copies).
    virtual void finish() {}
  };

  LoadSink() = default;
  LoadSink(const LoadSink&) = delete;
  LoadSink& operator=(const LoadSink&) = delete;
  virtual ~LoadSink() = default;

  // Whether items not streamed are units for the workers (true: the device stages them through
  // its ring) or handed to deliver_unstreamed on the calling thread before any read (false).
  [[nodiscard]] virtual bool stages_unstreamed() const noexcept = 0;
  // On the calling thread, before the workers start: an item not streamed (stages_unstreamed()
  // false, or an item of no bytes), delivered whole.
  virtual void deliver_unstreamed(std::size_t item) = 0;
  // On the calling thread, once: the workers to run for `units` units (at least one).
  [[nodiscard]] virtual unsigned start(std::size_t units) = 0;
  // Under the loop's lock: whether `unit` may be taken now (false: its bytes would exceed the
  // sink's budget until an item is delivered), and once it may, the destinations of the items
  // it starts. What claim throws stops the load.
  [[nodiscard]] virtual bool admits(const LoadUnit& /*unit*/) { return true; }
  virtual void claim(const LoadUnit& unit) = 0;
  [[nodiscard]] virtual std::unique_ptr<Worker> worker(unsigned index) = 0;
  // On the calling thread: `item`'s bytes have all landed (the caller's callback; freeing what
  // it held). What it throws stops the load.
  virtual void deliver(std::size_t /*item*/) {}
};

}  // namespace onnxmap::detail
