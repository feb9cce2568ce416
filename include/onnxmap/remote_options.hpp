#pragma once
// How a model given as an http:// or https:// URL is read: with HTTP range requests for exactly
// the bytes asked for, into a sparse local mirror that the index pass and the views run over.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "onnxmap/export.hpp"

namespace onnxmap {

struct RemoteOptions {
  // Empty: the mirror is a temporary folder removed at open (its files live on, unnamed, while
  // the model is open). Otherwise the mirror and a record of what it holds stay in a subfolder
  // of this folder, so the next open of the same URL (same size, ETag and Last-Modified) makes
  // one request.
  std::filesystem::path cache_dir;
  // A connection that cannot be made, or an answer that stalls (under 1 KiB/s), for this long
  // is an error.
  int timeout_seconds = 30;
  // Redirects followed per request (hubs redirect to CDNs); https never redirects to http.
  int max_redirects = 10;
  // Requests in flight at once when a large range is fetched in parts.
  int parallel = 4;
  // Certificates (PEM) to trust for https instead of the system's, for hubs with a private CA.
  std::filesystem::path ca_file;
  // The environment variable holding a bearer token (sent as "Authorization: Bearer ..." to the
  // model's host, never shown in an error). Empty: none.
  std::string token_variable = "ONNXMAP_HTTP_TOKEN";
};

// Whether `path` names a URL (http:// or https://, any case) rather than a file.
[[nodiscard]] ONNXMAP_API bool is_url(std::string_view path) noexcept;

}  // namespace onnxmap
