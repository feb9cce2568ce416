#pragma once
// When HttpClient tries a failed request again and how long it waits first: the pure rules,
// unit-tested without a server. The bounds are RemoteOptions' retry_* fields.

#include <ctime>
#include <optional>
#include <string_view>

#include "onnxmap/options.hpp"

namespace onnxmap::remote {

// The statuses worth trying again: 429 (too many requests) and 500, 502, 503, 504 (the server or
// a gateway in front of it failed, S3's SlowDown). Every other answer is final.
[[nodiscard]] bool transient_status(long status) noexcept;

// The wait, in seconds, that a Retry-After value asks for: delta-seconds ("120") or an HTTP-date
// in any of RFC 9110's three forms, counted from `now` (a date already past: 0). Nullopt for
// anything else, which is then ignored.
[[nodiscard]] std::optional<double> retry_after_seconds(std::string_view value, std::time_t now);

class RetryPolicy {
 public:
  explicit RetryPolicy(const RemoteOptions& options);

  // The wait before the next attempt of a request that has made `attempts` attempts (at least
  // 1) and waited `waited` seconds between them so far, or nullopt when it may not try again
  // (its attempts or its total wait spent). `retry_after` is what the last answer asked for;
  // `unit` a random number in [0, 1) that jitters a wait the server did not choose.
  [[nodiscard]] std::optional<double> next_wait(unsigned attempts, double waited,
                                                std::optional<double> retry_after,
                                                double unit) const;

 private:
  unsigned attempts_;
  double base_;
  double max_wait_;
  double total_wait_;
};

}  // namespace onnxmap::remote
