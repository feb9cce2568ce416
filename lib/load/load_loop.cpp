// The one loop every load runs (load_loop.hpp).

#include "load/load_loop.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <thread>
#include <utility>

#include "onnxmap/error.hpp"

namespace onnxmap::detail {

namespace {

double cpu_seconds_now() {
  rusage usage{};
  (void)getrusage(RUSAGE_SELF, &usage);
  const auto of = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return of(usage.ru_utime) + of(usage.ru_stime);
}

}  // namespace

LoadClock::LoadClock() : start_(std::chrono::steady_clock::now()), cpu_start_(cpu_seconds_now()) {}

void LoadClock::stamp(LoadStats& stats) const {
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  stats.cpu_seconds = cpu_seconds_now() - cpu_start_;
}

LoadLoop::LoadLoop(const LoadPlan& plan, const CommonLoadOptions& options, std::string name)
    : plan_(plan), options_(options), name_(std::move(name)), remaining_(plan.items.size(), 0) {
  const LoadMode read_mode = options.mode == LoadMode::direct ? LoadMode::direct : LoadMode::read;
  readers_.reserve(plan.files.size());
  for (const PlanFile& file : plan.files)
    readers_.push_back(file.file->reader()->reopen(read_mode));
}

const io::FileReader& LoadLoop::reader(const Request& request) const {
  if (!request.resident) return readers_[request.file];
  return plan_.files[request.file].file->buffered_reader()->get();
}

bool LoadLoop::all_direct() const {
  return !readers_.empty() &&
         std::all_of(readers_.begin(), readers_.end(), [](const auto& r) { return r.is_direct(); });
}

std::uint64_t LoadLoop::bytes_read(const io::FileReader& reader, std::uint64_t offset,
                                   std::uint64_t length) {
  return reader.is_direct() ? io::FileReader::staging_size(offset, length) : length;
}

void LoadLoop::count(const UnitCounts& counts) noexcept {
  stats_.requests += counts.requests;
  stats_.bytes_read += counts.bytes_read;
  stats_.bytes_copied += counts.bytes_copied;
}

bool LoadLoop::land(std::size_t item, std::uint64_t bytes) noexcept {
  landed_ += bytes;
  remaining_[item] -= bytes;
  return remaining_[item] == 0;
}

void LoadLoop::complete(std::span<const std::size_t> items) {
  const std::lock_guard held(lock);
  complete_.insert(complete_.end(), items.begin(), items.end());
  // Bytes that complete no item still move progress, which the caller may watch.
  if (!items.empty() || watched()) changed.notify_all();
}

// The requests in file order, then the items not streamed that the sink stages.
std::vector<LoadUnit> LoadLoop::units(const LoadSink& sink) const {
  std::vector<LoadUnit> units;
  units.reserve(plan_.requests.size());
  for (std::size_t r = 0; r < plan_.requests.size(); ++r)
    units.push_back({LoadUnit::Of::request, r});
  if (!sink.stages_unstreamed()) return units;
  for (std::size_t i = 0; i < plan_.items.size(); ++i) {
    const ResolvedItem& item = plan_.items[i];
    if (item.source != ItemSource::stream && item.length > 0)
      units.push_back({LoadUnit::Of::item, i});
  }
  return units;
}

std::size_t LoadLoop::deliver_unstreamed(LoadSink& sink) {
  std::size_t pending = 0;
  const bool staged = sink.stages_unstreamed();
  for (std::size_t i = 0; i < plan_.items.size(); ++i) {
    const ResolvedItem& item = plan_.items[i];
    if (item.source == ItemSource::stream || (staged && item.length > 0)) {
      remaining_[i] = item.length;
      ++pending;
      continue;
    }
    sink.deliver_unstreamed(i);
    delivered_whole_ += item.length;
    delivered(i);
    if (report()) rethrow_failure();  // the cancellation
  }
  return pending;
}

void LoadLoop::delivered(std::size_t item) {
  ++stats_.tensors;
  stats_.bytes += plan_.items[item].length;
}

LoadStats LoadLoop::run(LoadSink& sink) {
  for (const ResolvedItem& item : plan_.items) total_bytes_ += item.length;
  units_ = units(sink);
  const std::size_t pending = deliver_unstreamed(sink);
  const unsigned threads = units_.empty() ? 0 : sink.start(units_.size());
  {
    std::vector<std::jthread> workers;
    for (unsigned t = 0; t < threads; ++t)
      workers.emplace_back([this, &sink, t] { work(sink, t); });
    wait_and_deliver(sink, pending);
    {
      const std::lock_guard held(lock);
      stop_ = true;
    }
    changed.notify_all();
  }  // joins: every worker has let go of what it held
  rethrow_failure();
  stats_.direct = all_direct();
  stats_.retries = plan_.fetched.retries;
  stats_.retry_wait_ms = plan_.fetched.retry_wait_ms;
  return stats_;
}

// Delivers each item as its bytes complete, and reports progress between (only when watched:
// else only completed items wake this thread), until `pending` items are delivered or the
// load stops.
void LoadLoop::wait_and_deliver(LoadSink& sink, std::size_t pending) {
  const bool watching = watched();
  for (std::size_t done = 0; done < pending;) {
    std::unique_lock held(lock);
    changed.wait(held, [&] {
      return !complete_.empty() || failure_ || (watching && landed_ != landed_reported_);
    });
    if (failure_) return;
    if (complete_.empty()) {
      held.unlock();
      if (report()) return;
      continue;
    }
    ++done;
    const std::size_t item = complete_.front();
    complete_.pop_front();
    held.unlock();
    try {
      sink.deliver(item);
    } catch (...) {
      fail(std::current_exception());
      return;
    }
    delivered(item);
    if (report()) return;
  }
}

void LoadLoop::work(LoadSink& sink, unsigned index) {
  try {
    const std::unique_ptr<LoadSink::Worker> worker = sink.worker(index);
    while (const LoadUnit* unit = take(sink)) worker->run(*unit);
    worker->finish();
  } catch (...) {
    fail(std::current_exception());
  }
}

const LoadUnit* LoadLoop::take(LoadSink& sink) {
  std::unique_lock held(lock);
  while (true) {
    if (stop_ || next_unit_ >= units_.size()) return nullptr;
    if (sink.admits(units_[next_unit_])) break;
    changed.wait(held);
  }
  const LoadUnit& unit = units_[next_unit_++];
  try {
    sink.claim(unit);
  } catch (...) {
    fail_locked(std::current_exception());
    return nullptr;
  }
  return &unit;
}

void LoadLoop::fail_locked(std::exception_ptr failure) {
  if (!failure_) failure_ = std::move(failure);
  stop_ = true;
  changed.notify_all();
}

void LoadLoop::fail(std::exception_ptr failure) {
  const std::lock_guard held(lock);
  fail_locked(std::move(failure));
}

void LoadLoop::rethrow_failure() {
  std::exception_ptr failure;
  {
    const std::lock_guard held(lock);
    failure = failure_;
  }
  if (failure) std::rethrow_exception(failure);
}

bool LoadLoop::report() {
  if (!watched()) return false;
  std::uint64_t landed = 0;
  {
    const std::lock_guard held(lock);
    landed = landed_reported_ = landed_;
  }
  const std::uint64_t done = delivered_whole_ + landed;
  if (options_.progress) options_.progress(done, total_bytes_);
  if (!options_.cancelled || !options_.cancelled()) return false;
  fail(std::make_exception_ptr(
      Error(ErrorKind::cancelled, name_ + " was cancelled after " + std::to_string(stats_.tensors) +
                                      " tensors, " + std::to_string(done) + " of " +
                                      std::to_string(total_bytes_) + " bytes")));
  return true;
}

}  // namespace onnxmap::detail
