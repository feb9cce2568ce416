#pragma once
// Statistics of one tensor as a background job the page polls: its bytes are read with the
// loader and counted on its threads as they land (onnxmap::plan_stats), with progress and a
// cancel as the reads land. At most kRunningJobs run at once; finished jobs are kept for a while
// for the page to fetch.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "onnxmap/onnxmap.hpp"

namespace onnxmap::cli::viewer {

// A refusal of the API, with its HTTP status: 400, 404, 405, 429.
struct ApiError {
  unsigned status;
  std::string message;
};

class StatsJobs {
 public:
  static constexpr std::size_t kRunningJobs = 2;
  static constexpr std::size_t kKeptJobs = 64;

  StatsJobs() = default;
  ~StatsJobs();  // cancels the running jobs and waits for them
  StatsJobs(const StatsJobs&) = delete;
  StatsJobs& operator=(const StatsJobs&) = delete;

  // Starts a job for `t`: {"job": id}. Throws ApiError 400 (no statistics for its type) or 429.
  [[nodiscard]] nlohmann::json start(const Tensor& t, unsigned bins);
  // The job's state (api.md); throws ApiError 404 for an unknown id.
  [[nodiscard]] nlohmann::json status(const std::string& id);
  // Asks the job to stop; returns its state.
  [[nodiscard]] nlohmann::json cancel(const std::string& id);

 private:
  struct Job;
  std::shared_ptr<Job> find(const std::string& id);

  std::mutex mutex_;
  std::uint64_t next_id_ = 1;
  std::map<std::uint64_t, std::shared_ptr<Job>> jobs_;
};

}  // namespace onnxmap::cli::viewer
