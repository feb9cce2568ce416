#pragma once
// The one loop every load runs, whatever its sink (load_sink.hpp). Workers take the plan's
// units in file order (its requests, then the items not streamed where the sink stages them),
// the sink admitting each (its budget) and claiming its items' destinations under the loop's
// lock; a sink's worker moves each unit's bytes and reports what has landed; the calling thread
// delivers every item whose bytes have all landed, reports progress, asks for cancellation and
// rethrows the first failure. The plan's files are opened here by the load's mode. A fix to how
// a load is ordered, counted, stopped, failed or cancelled is made here, once.
//
// Threads: the workers and the calling thread share one LoadLoop; members marked "under lock"
// are called with `lock` held, the others take it themselves.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "io/file_reader.hpp"
#include "load/load_plan.hpp"
#include "load/load_sink.hpp"
#include "onnxmap/load.hpp"

namespace onnxmap::detail {

// A load's wall and CPU time from its start (before planning) to stamp().
class LoadClock {
 public:
  LoadClock();
  // Sets stats.seconds and stats.cpu_seconds to the time since this clock was made.
  void stamp(LoadStats& stats) const;

 private:
  std::chrono::steady_clock::time_point start_;
  double cpu_start_ = 0;
};

// What a unit's reads and copies cost, for LoadStats.
struct UnitCounts {
  std::uint64_t requests = 0;      // requests of the plan done
  std::uint64_t bytes_read = 0;    // from files (LoadLoop::bytes_read)
  std::uint64_t bytes_copied = 0;  // copied after they were read or decoded
};

class LoadLoop {
 public:
  // Opens every file of `plan` for reading: O_DIRECT in LoadMode::direct (where the file system
  // allows it), else buffered (map mode reads to fill the page cache). `name` names the load in
  // a cancellation's message: "the load", "the load to cuda:0".
  LoadLoop(const LoadPlan& plan, const CommonLoadOptions& options, std::string name);

  // Runs the load through `sink`; returns every LoadStats field but fresh_buffer_bytes (the
  // memory sink's), seconds and cpu_seconds (LoadClock). Throws the first failure.
  LoadStats run(LoadSink& sink);

  std::mutex lock;
  std::condition_variable changed;

  // The reader of `request`: its file's, or buffered for a resident request whatever the mode
  // (Request::resident: an O_DIRECT read would fetch its pages from the disk again).
  [[nodiscard]] const io::FileReader& reader(const Request& request) const;
  // The bytes a read of [offset, offset + length) by `reader` takes from its file: the aligned
  // range around it when the read is direct.
  [[nodiscard]] static std::uint64_t bytes_read(const io::FileReader& reader, std::uint64_t offset,
                                                std::uint64_t length);

  // Under lock: adds a unit's costs to the statistics.
  void count(const UnitCounts& counts) noexcept;
  // Under lock: `bytes` more of `item` have landed; true when they were its last.
  [[nodiscard]] bool land(std::size_t item, std::uint64_t bytes) noexcept;
  // Queues `items`, whose bytes have all landed, for delivery on the calling thread.
  void complete(std::span<const std::size_t> items);
  // Under lock: whether the workers are to stop (a failure, a cancellation, the end).
  [[nodiscard]] bool stopped() const noexcept { return stop_; }

 private:
  [[nodiscard]] std::vector<LoadUnit> units(const LoadSink& sink) const;
  // Delivers the items no worker moves, on the calling thread; returns the items to wait for.
  [[nodiscard]] std::size_t deliver_unstreamed(LoadSink& sink);
  void wait_and_deliver(LoadSink& sink, std::size_t pending);
  void work(LoadSink& sink, unsigned index);
  // The next unit, admitted and claimed by the sink; null at the end or once stopped.
  [[nodiscard]] const LoadUnit* take(LoadSink& sink);
  void delivered(std::size_t item);
  // progress(done, total), then cancelled(); true when cancelled, the failure then kept being
  // the cancellation (naming the load, the tensors and bytes done). On the calling thread.
  [[nodiscard]] bool report();
  [[nodiscard]] bool watched() const noexcept { return options_.progress || options_.cancelled; }
  [[nodiscard]] bool all_direct() const;
  void fail(std::exception_ptr failure);
  void fail_locked(std::exception_ptr failure);
  void rethrow_failure();

  const LoadPlan& plan_;
  const CommonLoadOptions& options_;
  std::string name_;
  std::vector<io::FileReader> readers_;  // per plan file
  std::vector<LoadUnit> units_;
  std::uint64_t total_bytes_ = 0;
  std::uint64_t delivered_whole_ = 0;  // bytes of items delivered by deliver_unstreamed
  LoadStats stats_;                    // tensors and bytes: calling thread; the rest under lock

  // Under lock:
  std::vector<std::uint64_t> remaining_;  // per item, bytes not yet landed
  std::uint64_t landed_ = 0;              // bytes landed, of every item
  std::uint64_t landed_reported_ = 0;     // landed_ as progress last reported it
  std::deque<std::size_t> complete_;      // items landed, waiting for delivery
  std::size_t next_unit_ = 0;
  std::exception_ptr failure_;
  bool stop_ = false;
};

}  // namespace onnxmap::detail
