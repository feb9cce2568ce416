#pragma once
// Range requests to one URL through libcurl, every answer checked: 206 with the Content-Range
// asked for, the body length it announces, and the same total size, ETag and Last-Modified as
// the first answer. A 200 to a ranged request is refused before its body is read (a server that
// ignores Range must never make us download a whole model). Not thread-safe: callers serialize.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/payload_fetcher.hpp"
#include "onnxmap/options.hpp"

namespace onnxmap::remote {

using detail::ByteRange;

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

 private:
  void* share_;
};

class HttpClient {
 public:
  // Body bytes of range `index` of a fetch, starting at file offset `offset`.
  using Sink =
      std::function<void(std::size_t index, std::uint64_t offset, std::span<const std::byte>)>;

  HttpClient(std::string url, const RemoteOptions& options, const HttpSession& session);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // The first request: bytes [0, length) or fewer at the file's end; learns the validators.
  [[nodiscard]] std::vector<std::byte> probe(std::uint64_t length);
  // Takes validators known from a cache instead of a probe: later answers must match them.
  void assume(const Validators& known) { validators_ = known; }
  // Fetches every range (after probe or assume), up to RemoteOptions::parallel at once.
  void fetch(std::span<const ByteRange> ranges, const Sink& sink);

  [[nodiscard]] const Validators& validators() const noexcept { return validators_; }
  [[nodiscard]] const std::string& url() const noexcept { return url_; }

  struct Transfer;  // one request in flight (http_client.cpp)

 private:
  void run(std::vector<std::unique_ptr<Transfer>>& transfers, const Sink& sink);
  void start(Transfer& transfer);
  void finish(Transfer& transfer, int curl_code);

  std::string url_;
  RemoteOptions options_;
  std::string token_;
  const HttpSession& session_;
  void* multi_;
  std::vector<void*> idle_handles_;  // easy handles kept for their connections
  Validators validators_;
};

}  // namespace onnxmap::remote
