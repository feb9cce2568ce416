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
}

}  // namespace onnxmap::cli
