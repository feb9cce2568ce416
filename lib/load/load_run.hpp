#pragma once
// What every load's threads share, whatever its sink: the host loader's (engine.hpp) and the
// device loader's (device/device_pipeline.hpp). The plan's files opened by the load's mode, the
// lock and condition variable that guard the run's state (the sink's own state too), the first
// failure and the stop it causes, and progress and cancellation on the calling thread. A fix to
// how a load stops, fails or is cancelled is made here, once.
//
// Threads: the workers and the calling thread share one LoadRun; members marked "under lock"
// are called with `lock` held, the others take it themselves.

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "io/file_reader.hpp"
#include "load/load_plan.hpp"
#include "onnxmap/load.hpp"

namespace onnxmap::detail {

class LoadRun {
 public:
  // Opens every file of `plan` for reading: O_DIRECT in LoadMode::direct (where the file system
  // allows it), else buffered (map mode reads to fill the page cache). `name` names the load in
  // a cancellation's message: "the load", "the load to cuda:0".
  LoadRun(const LoadPlan& plan, const LoadOptions& options, std::string name);

  std::mutex lock;
  std::condition_variable changed;

  // The reader of `request`: its file's, or buffered for a resident request whatever the mode
  // (Request::resident: an O_DIRECT read would fetch its pages from the disk again).
  [[nodiscard]] const io::FileReader& reader(const Request& request) const;
  // Every file was read with O_DIRECT: after the reads, for a reader whose direct reads were
  // refused midway read buffered from then on.
  [[nodiscard]] bool all_direct() const;
  // The bytes a read of [offset, offset + length) by `reader` takes from its file: the aligned
  // range around it when the read is direct.
  [[nodiscard]] static std::uint64_t bytes_read(const io::FileReader& reader, std::uint64_t offset,
                                                std::uint64_t length);

  // Under lock: whether a failure was kept, and whether the workers are to stop (a failure, a
  // cancellation, or the calling thread's end of the run).
  [[nodiscard]] bool failed() const noexcept { return failure_ != nullptr; }
  [[nodiscard]] bool stopped() const noexcept { return stop_; }
  // Under lock: keeps `failure` unless one is kept already, stops the workers, wakes everyone.
  void fail_locked(std::exception_ptr failure);
  // The same, taking the lock.
  void fail(std::exception_ptr failure);
  // Stops the workers and wakes everyone, taking the lock: the end of the run.
  void stop();
  // Throws the failure kept, if any (a cancellation that report() kept, or after the workers
  // are joined, the first failure).
  void rethrow_failure();

  // Whether the options ask for progress or cancellation (else nothing is reported).
  [[nodiscard]] bool watched() const noexcept { return options_.progress || options_.cancelled; }
  // On the calling thread: progress(done, total), then cancelled(); true when cancelled, the
  // failure then kept being the cancellation (naming the load, the tensors and bytes done).
  [[nodiscard]] bool report(std::uint64_t tensors, std::uint64_t done, std::uint64_t total);

 private:
  const LoadPlan& plan_;
  const LoadOptions& options_;
  std::string name_;
  std::vector<io::FileReader> readers_;  // per plan file
  std::exception_ptr failure_;           // under lock
  bool stop_ = false;                    // under lock
};

}  // namespace onnxmap::detail
