#include "progress_bar.hpp"

#include <unistd.h>

#include <iostream>

#include "format.hpp"

namespace onnxmap::cli {

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), enabled_(::isatty(STDERR_FILENO) == 1), start_(Clock::now()) {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::cerr << "\r\033[K" << std::flush;
}

void ProgressBar::update(std::uint64_t done, std::uint64_t total) {
  if (!enabled_) return;
  const auto now = Clock::now();
  if (now - start_ < std::chrono::seconds(1) || now - last_ < std::chrono::milliseconds(100)) {
    return;
  }
  last_ = now;
  drawn_ = true;
  constexpr int kWidth = 30;
  const double fraction = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
  const int filled = static_cast<int>(fraction * kWidth);
  const double seconds = std::chrono::duration<double>(now - start_).count();
  std::cerr << '\r' << label_ << " [" << std::string(static_cast<std::size_t>(filled), '#')
            << std::string(static_cast<std::size_t>(kWidth - filled), ' ') << "] "
            << static_cast<int>(fraction * 100) << "% " << human_bytes(done) << " / "
            << human_bytes(total) << ", "
            << human_bytes(static_cast<std::uint64_t>(static_cast<double>(done) / seconds))
            << "/s\033[K" << std::flush;
}

}  // namespace onnxmap::cli
