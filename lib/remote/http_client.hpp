#pragma once
// Range requests to one URL through libcurl, every answer checked: 206 with the Content-Range
// asked for, the body length it announces, and the same total size, ETag and Last-Modified as
// the first answer. A 200 to a ranged request is refused before its body is read (a server that
// ignores Range must never make us download a whole model). Transient failures are tried again
// within RemoteOptions' retry bounds (retry_policy.hpp), a cut body resumed from its first
// missing byte. Not thread-safe: callers serialize.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "io/payload_fetcher.hpp"
#include "onnxmap/error.hpp"
#include "onnxmap/options.hpp"
#include "remote/endpoint.hpp"
#include "remote/retry_policy.hpp"

namespace onnxmap::remote {

// What identifies one version of a remote file.
struct Validators {
  std::uint64_t size = 0;
  std::string etag;
  std::string last_modified;
  friend bool operator==(const Validators&, const Validators&) = default;
};

// Connections (and DNS answers) shared by the clients of one model.
class HttpSession {
 public:
  HttpSession();
  ~HttpSession();
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;
  [[nodiscard]] void* share() const noexcept { return share_; }

  // What the clients of the session did, in all (any thread may ask).
  [[nodiscard]] FetchStats totals() const noexcept;
  void count(const FetchStats& stats) const noexcept;

 private:
  void* share_;
  mutable std::atomic<std::uint64_t> requests_{0};
  mutable std::atomic<std::uint64_t> retries_{0};
  mutable std::atomic<std::uint64_t> retry_wait_ms_{0};
};

class HttpClient {
 public:
  // Body bytes of range `index` of a fetch, starting at file offset `offset`.
  using Sink =
      std::function<void(std::size_t index, std::uint64_t offset, std::span<const std::byte>)>;

  // Requests go to endpoint.url, authenticated by endpoint.access; errors name endpoint.shown.
  HttpClient(Endpoint endpoint, const RemoteOptions& options, const HttpSession& session);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // The first request: bytes [0, length) or fewer at the file's end; learns the validators.
  [[nodiscard]] std::vector<std::byte> probe(std::uint64_t length);
  // Takes validators known from a cache instead of a probe: later answers must match them.
  void assume(const Validators& known) { validators_ = known; }
  // Fetches every range (after probe or assume), up to RemoteOptions::connections at once;
  // returns the requests and retries that took.
  FetchStats fetch(std::span<const ByteRange> ranges, const Sink& sink);

  [[nodiscard]] const Validators& validators() const noexcept { return validators_; }
  // The URL requested, and the name errors give it (no secret in that one).
  [[nodiscard]] const std::string& url() const noexcept { return endpoint_.url; }
  [[nodiscard]] const std::string& shown() const noexcept { return endpoint_.shown; }

  struct Transfer;  // one request in flight (http_client.cpp)

 private:
  FetchStats run(std::vector<std::unique_ptr<Transfer>>& transfers, const Sink& sink);
  void start(Transfer& transfer);
  void authenticate(void* handle) const;
  std::optional<Error> finish(Transfer& transfer, int curl_code);
  bool schedule_retry(Transfer& transfer, FetchStats& stats);

  Endpoint endpoint_;
  RemoteOptions options_;
  void* headers_ = nullptr;  // curl_slist of the headers every request adds (signing: S3's)
  const HttpSession& session_;
  void* multi_;
  std::vector<void*> idle_handles_;  // easy handles kept for their connections
  Validators validators_;
  RetryPolicy retry_policy_;
  std::minstd_rand random_;  // jitters the waits between attempts
};

}  // namespace onnxmap::remote
