// What every load's threads share (load_run.hpp).

#include "load/load_run.hpp"

#include <algorithm>
#include <utility>

#include "onnxmap/error.hpp"

namespace onnxmap::detail {

LoadRun::LoadRun(const LoadPlan& plan, const LoadOptions& options, std::string name)
    : plan_(plan), options_(options), name_(std::move(name)) {
  const LoadMode read_mode = options.mode == LoadMode::direct ? LoadMode::direct : LoadMode::read;
  readers_.reserve(plan.files.size());
  for (const PlanFile& file : plan.files)
    readers_.push_back(file.file->reader()->reopen(read_mode));
}

const io::FileReader& LoadRun::reader(const Request& request) const {
  if (!request.resident) return readers_[request.file];
  return plan_.files[request.file].file->buffered_reader()->get();
}

bool LoadRun::all_direct() const {
  return !readers_.empty() &&
         std::all_of(readers_.begin(), readers_.end(), [](const auto& r) { return r.is_direct(); });
}

std::uint64_t LoadRun::bytes_read(const io::FileReader& reader, std::uint64_t offset,
                                  std::uint64_t length) {
  return reader.is_direct() ? io::FileReader::staging_size(offset, length) : length;
}

void LoadRun::fail_locked(std::exception_ptr failure) {
  if (!failure_) failure_ = std::move(failure);
  stop_ = true;
  changed.notify_all();
}

void LoadRun::fail(std::exception_ptr failure) {
  const std::lock_guard held(lock);
  fail_locked(std::move(failure));
}

void LoadRun::stop() {
  {
    const std::lock_guard held(lock);
    stop_ = true;
  }
  changed.notify_all();
}

void LoadRun::rethrow_failure() {
  std::exception_ptr failure;
  {
    const std::lock_guard held(lock);
    failure = failure_;
  }
  if (failure) std::rethrow_exception(failure);
}

bool LoadRun::report(std::uint64_t tensors, std::uint64_t done, std::uint64_t total) {
  if (options_.progress) options_.progress(done, total);
  if (!options_.cancelled || !options_.cancelled()) return false;
  fail(std::make_exception_ptr(
      Error(ErrorKind::cancelled, name_ + " was cancelled after " + std::to_string(tensors) +
                                      " tensors, " + std::to_string(done) + " of " +
                                      std::to_string(total) + " bytes")));
  return true;
}

}  // namespace onnxmap::detail
