#include "stats_jobs.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>

#include "onnxmap/stats.hpp"
#include "shared/model_json.hpp"

namespace onnxmap::cli::viewer {

namespace {

enum class JobState { running, done, cancelled, failed };

const char* state_name(JobState s) {
  switch (s) {
    case JobState::running: return "running";
    case JobState::done: return "done";
    case JobState::cancelled: return "cancelled";
    case JobState::failed: return "failed";
  }
  return "failed";
}

struct Cancelled {};

}  // namespace

struct StatsJobs::Job {
  std::string id;
  Tensor tensor;
  unsigned bins = 32;
  std::atomic<JobState> state{JobState::running};
  std::atomic<bool> cancel{false};
  std::atomic<std::uint64_t> bytes_read{0};
  std::mutex mutex;  // guards result and error
  nlohmann::json result;
  std::string error;
  std::thread worker;

  explicit Job(Tensor t) : tensor(std::move(t)) {}

  // The payload read into memory with progress, then the statistics.
  void run() {
    try {
      const TensorStats s = count();
      nlohmann::json out = tensor_stats_json(tensor, &s);
      std::vector<double> edges;
      for (unsigned k = 0; k <= bins; ++k) edges.push_back(s.min + (s.max - s.min) * k / bins);
      out["bins"] = std::isfinite(s.min) ? nlohmann::json(edges) : nlohmann::json::array();
      const std::lock_guard lock(mutex);
      result = std::move(out);
      state = JobState::done;
    } catch (const Cancelled&) {
      state = JobState::cancelled;
    } catch (const std::exception& e) {
      const std::lock_guard lock(mutex);
      error = e.what();
      state = JobState::failed;
    }
  }

  // The tensor read with the loader's large requests (a URL's model fetches it) and counted on
  // its threads as the bytes land (onnxmap::plan_stats), its progress shown and a cancel
  // honoured as the reads land.
  TensorStats count() {
    LoadOptions options;
    options.mode = LoadMode::map;
    options.progress = [this](std::uint64_t done, std::uint64_t) { bytes_read = done; };
    options.cancelled = [this] { return cancel.load(); };
    const LoadItem item{tensor};
    std::optional<TensorStats> s;
    try {
      s = std::move(plan_stats(std::span(&item, 1), bins, options).front());
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::cancelled) throw Cancelled{};
      throw;
    }
    if (cancel) throw Cancelled{};
    return std::move(*s);  // start() took only types with statistics
  }

  nlohmann::json status() {
    nlohmann::json out = {{"job", id},
                          {"name", std::string(tensor.lookup_name())},
                          {"state", state_name(state)},
                          {"bytes_read", bytes_read.load()},
                          {"bytes", tensor.byte_size()}};
    const std::uint64_t total = tensor.byte_size();
    out["progress"] = state == JobState::done ? 1.0
                      : total == 0            ? 0.0
                                              : double(bytes_read) / double(total);
    const std::lock_guard lock(mutex);
    if (state == JobState::done) out["stats"] = result;
    if (state == JobState::failed) out["error"] = error;
    return out;
  }
};

StatsJobs::~StatsJobs() {
  for (auto& [id, job] : jobs_) job->cancel = true;
  for (auto& [id, job] : jobs_) {
    if (job->worker.joinable()) job->worker.join();
  }
}

nlohmann::json StatsJobs::start(const Tensor& t, unsigned bins) {
  if (!has_stats(t.data_type())) {
    throw ApiError{400, "no statistics for " + to_string(t.data_type()) + " values"};
  }
  const std::lock_guard lock(mutex_);
  const auto running = std::count_if(jobs_.begin(), jobs_.end(), [](const auto& entry) {
    return entry.second->state == JobState::running;
  });
  if (static_cast<std::size_t>(running) >= kRunningJobs) {
    throw ApiError{429, "statistics are being computed for " + std::to_string(running) +
                            " tensors already: wait for one or cancel it"};
  }
  // Forget the oldest finished jobs beyond the ones kept.
  for (auto it = jobs_.begin(); jobs_.size() >= kKeptJobs && it != jobs_.end();) {
    if (it->second->state == JobState::running) {
      ++it;
      continue;
    }
    it->second->worker.join();
    it = jobs_.erase(it);
  }
  auto job = std::make_shared<Job>(t);
  job->id = std::to_string(next_id_);
  job->bins = bins;
  job->worker = std::thread([job] { job->run(); });
  jobs_[next_id_++] = job;
  return {{"job", job->id}};
}

std::shared_ptr<StatsJobs::Job> StatsJobs::find(const std::string& id) {
  const std::lock_guard lock(mutex_);
  for (const auto& [number, job] : jobs_) {
    if (job->id == id) return job;
  }
  throw ApiError{404, "no statistics job " + id};
}

nlohmann::json StatsJobs::status(const std::string& id) {
  return find(id)->status();
}

nlohmann::json StatsJobs::cancel(const std::string& id) {
  const auto job = find(id);
  job->cancel = true;
  return job->status();
}

}  // namespace onnxmap::cli::viewer
