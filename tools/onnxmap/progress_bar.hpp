#pragma once
// A progress line on stderr for the verbs that read or write whole models: drawn only on a
// terminal and only once the work has taken a second, so short runs stay silent and redirected
// output never holds control characters. Cleared when done.

#include <chrono>
#include <cstdint>
#include <string>

namespace onnxmap::cli {

class ProgressBar {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ProgressBar(std::string label);
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar();

  void update(std::uint64_t done, std::uint64_t total);

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  Clock::time_point start_;
  Clock::time_point last_{};
};

}  // namespace onnxmap::cli
