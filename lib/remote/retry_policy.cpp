#include "remote/retry_policy.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "remote/curl_api.hpp"

namespace onnxmap::remote {

bool transient_status(long status) noexcept {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

std::optional<double> retry_after_seconds(std::string_view value, std::time_t now) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  if (value.front() >= '0' && value.front() <= '9') {
    std::uint64_t seconds = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (ec == std::errc::result_out_of_range) return 1e18;  // "wait forever": capped later
    if (ec != std::errc() || end != value.data() + value.size()) return std::nullopt;
    return static_cast<double>(seconds);
  }
  // libcurl's date parser reads IMF-fixdate, RFC 850 and asctime dates, whatever the locale.
  const std::string text(value.substr(0, 64));
  const std::time_t when = curl().getdate(text.c_str(), nullptr);
  if (when == -1) return std::nullopt;
  return std::max(0.0, std::difftime(when, now));
}

RetryPolicy::RetryPolicy(const RemoteOptions& options)
    : attempts_(std::max(options.retry_attempts, 1U)),
      base_(std::max(options.retry_base_seconds, 0.0)),
      max_wait_(std::max(options.retry_max_wait_seconds, 0.0)),
      total_wait_(std::max(options.retry_total_wait_seconds, 0.0)) {}

std::optional<double> RetryPolicy::next_wait(unsigned attempts, double waited,
                                             std::optional<double> retry_after, double unit) const {
  if (attempts >= attempts_) return std::nullopt;
  double wait = 0;
  if (retry_after) {
    wait = std::min(*retry_after, max_wait_);
  } else {
    // Retry k = attempts waits up to base * 2^(k-1); the exponent is clipped long before a
    // double could overflow.
    const double ceiling =
        std::min(max_wait_, base_ * std::ldexp(1.0, std::min(attempts, 60U) - 1));
    wait = std::clamp(unit, 0.0, 1.0) * ceiling;
  }
  if (waited + wait > total_wait_) return std::nullopt;
  return wait;
}

}  // namespace onnxmap::remote
