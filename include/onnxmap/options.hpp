#pragma once
// How models are opened and read: the load mode, the options of an open (local or by URL) with
// safe limits by default, and the one shape of progress callback. An input past a limit is an
// onnxmap::Error whose message names the option (depth_limit for max_depth, limit_exceeded for
// the others).
//
// Threads: options are plain values; the functions here read only their arguments and may be
// called from any thread.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "onnxmap/export.hpp"

namespace onnxmap {

// How a file's bytes are fetched: OpenOptions::mode, LoadOptions::mode, --mode on the command
// line.
enum class LoadMode {
  // mmap: nothing is read until touched, bytes are views into the page cache (zero-copy).
  map,
  // Large pread(2) requests into memory the library or the caller owns; the file's pages stay
  // in the page cache afterwards. Opening a model this way copies the whole file, so it is
  // immune to the file changing later (also how pipes and standard input are read).
  read,
  // O_DIRECT reads into aligned buffers, bypassing the page cache: the file's pages are not left
  // in memory. Where the file system refuses O_DIRECT, reads fall back to `read`.
  direct,
};

// "map", "read", "direct".
[[nodiscard]] ONNXMAP_API std::string_view to_string(LoadMode mode) noexcept;
// The mode named `name`, or nullopt.
[[nodiscard]] ONNXMAP_API std::optional<LoadMode> parse_load_mode(std::string_view name) noexcept;

// Called as work advances (saving, checking, loading), on the calling thread: bytes done so far
// and the total.
using ProgressCallback = std::function<void(std::uint64_t bytes_done, std::uint64_t bytes_total)>;

// How a model given as a URL (http://, https://, s3://, hf://: docs/remote.md) is read: with HTTP
// range requests for exactly the bytes asked for, into a sparse local mirror that the index pass
// and the views run over.
struct RemoteOptions {
  // Empty: the mirror is a temporary folder removed at open (its files live on, unnamed, while
  // the model is open). Otherwise the mirror and a record of what it holds stay in a subfolder
  // of this folder, so the next open of the same URL (same size, ETag and Last-Modified) makes
  // one request.
  std::filesystem::path cache_dir;
  // A connection that cannot be made, or an answer that stalls (under 1 KiB/s), for this long
  // is an error.
  unsigned timeout_seconds = 30;
  // Redirects followed per request (hubs redirect to CDNs); https never redirects to http.
  unsigned max_redirects = 10;
  // Requests in flight at once when a large range is fetched in parts (at least 1).
  unsigned connections = 4;
  // Transient failures (HTTP 429, 500, 502, 503, 504; a connection refused or reset; a timeout;
  // a body cut short) are tried again, a cut body from its first byte not yet received, up to
  // retry_attempts attempts per request in all (1: never again). The wait before retry k
  // (1, 2, ...) is a random fraction of min(retry_max_wait_seconds, retry_base_seconds * 2^(k-1))
  // ("full jitter", so that many clients do not come back at once), or what the server's
  // Retry-After asks for, up to retry_max_wait_seconds. A retry whose wait would take a
  // request's waits past retry_total_wait_seconds is not made: the request fails. 4xx answers
  // other than 429, and an object that changed between requests, are never retried. With
  // these defaults a store that always answers 503 fails within 45 s of waiting (15 s without
  // Retry-After); docs/remote.md says why five attempts.
  unsigned retry_attempts = 5;
  double retry_base_seconds = 1.0;
  double retry_max_wait_seconds = 20.0;
  double retry_total_wait_seconds = 45.0;
  // Certificates (PEM) to trust for https instead of the system's, for hubs with a private CA.
  std::filesystem::path ca_file;
  // The environment variable holding a bearer token for http:// and https:// URLs (sent as
  // "Authorization: Bearer ..." to the model's host, never shown). Empty: none. s3:// and hf://
  // take their credentials from their own places (docs/remote.md).
  std::string token_variable = "ONNXMAP_HTTP_TOKEN";
};

// What the requests of a model opened by URL came to (Model::fetch_stats, per call in
// LoadStats): every attempt counts as a request; a retry is an attempt after the first of its
// request; retry_wait_ms sums the waits before them.
struct FetchStats {
  std::uint64_t requests = 0;
  std::uint64_t retries = 0;
  std::uint64_t retry_wait_ms = 0;
  FetchStats& operator+=(const FetchStats& other) noexcept {
    requests += other.requests;
    retries += other.retries;
    retry_wait_ms += other.retry_wait_ms;
    return *this;
  }
};

// The largest max_depth accepted. Leaf messages (types in types) are checked recursively at open,
// and each level of that costs native stack; this ceiling keeps a deep file from overflowing the
// stack whatever the caller configures (a larger max_depth is an invalid_argument error).
inline constexpr int kMaxDepthCeiling = 10000;

struct OpenOptions {
  // How the model file and its external data files are fetched. map: pages are read on touch (a
  // file truncated while mapped raises SIGBUS on the next touch); read: each whole file is copied
  // into memory with large reads, immune to that (pipes and stdin are always read); direct:
  // copied like read, but around the page cache (O_DIRECT).
  LoadMode mode = LoadMode::map;
  // Messages nested deeper than this (subgraphs in attributes in nodes ...) are an error, never a
  // stack overflow. 1..kMaxDepthCeiling.
  int max_depth = 64;
  // At most this many tensors; a limit, not a reservation.
  std::uint64_t max_tensors = std::uint64_t{1} << 28U;
  // At most this many structural messages (graphs, nodes, attributes, tensors, value infos, ...)
  // in the index: the size of the metadata a model may have. Each costs about 48 bytes of index,
  // so the default bounds the index to about 3 GiB; the largest real models hold a few million.
  std::uint64_t max_messages = std::uint64_t{1} << 26U;
  // External data locations that are absolute, climb out with "..", or reach outside the model's
  // folder through a symlink or hardlink are refused unless this is set.
  bool allow_external_outside_folder = false;
  // A tensor whose payload cannot be located or does not fit its dims and data type (raw_data of
  // the wrong size, a missing, unsafe or too short external file, a negative dimension) fails
  // the open unless this is set. When set, such a tensor opens with TensorStorage::invalid, its
  // bytes() throw that error, and Model::payload_errors() lists every one: what `check` needs to
  // report all problems of a file, not just the first.
  bool collect_payload_errors = false;
  // For a model opened by URL; unused for files.
  RemoteOptions remote{};
};

// Whether `path` names a URL (http://, https://, s3:// or hf://, any case) rather than a file.
[[nodiscard]] ONNXMAP_API bool is_url(std::string_view path) noexcept;

// `path` as fit to show in a message or output: a URL loses its user information ("user:password@")
// and its query and fragment (which may hold a signature or a token); anything else is returned
// unchanged. Every error, output and record of onnxmap names a URL this way.
[[nodiscard]] ONNXMAP_API std::string shown_url(std::string_view path);

}  // namespace onnxmap
