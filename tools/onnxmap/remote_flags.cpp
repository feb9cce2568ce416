#include "remote_flags.hpp"

#include <string>

namespace onnxmap::cli {

void add_remote_flags(CLI::App* sub, RemoteOptions& remote) {
  sub->add_option_function<std::string>(
      "--cache", [&remote](const std::string& dir) { remote.cache_dir = dir; },
      "for a URL: keep the fetched metadata in DIR, so the next open makes one request");
  sub->add_option("--http-timeout", remote.timeout_seconds,
                  "for a URL: seconds without progress before a request fails")
      ->check(CLI::PositiveNumber);
  sub->add_option_function<std::string>(
      "--http-ca", [&remote](const std::string& file) { remote.ca_file = file; },
      "for an https URL: trust the certificates in this PEM file instead of the system's");
  sub->add_option("--http-attempts", remote.retry_attempts,
                  "for a URL: attempts per request when the server fails transiently (5xx, 429, "
                  "a dropped or stalled connection), the first included; 1 = no retry")
      ->check(CLI::PositiveNumber);
  sub->add_option("--http-retry-base", remote.retry_base_seconds,
                  "for a URL: seconds the first retry waits at most (a random fraction of it), "
                  "doubling for each further one")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--http-retry-max-wait", remote.retry_max_wait_seconds,
                  "for a URL: the longest single wait before a retry, Retry-After included")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--http-retry-total-wait", remote.retry_total_wait_seconds,
                  "for a URL: the most one request waits between its attempts in all")
      ->check(CLI::NonNegativeNumber);
}

}  // namespace onnxmap::cli
