#pragma once
// One range request of HttpClient, over all its attempts, and the checks on its answers: the
// status, the Content-Range asked for, the body length it announces, and the same total size,
// ETag and Last-Modified as the file's first answer (so that a resumed body never mixes two
// versions of a file).

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "onnxmap/error.hpp"
#include "remote/curl_api.hpp"
#include "remote/http_client.hpp"

namespace onnxmap::remote {

struct HttpClient::Transfer {
  ByteRange want;
  std::size_t index = 0;
  bool probe = false;  // learns the file's validators (HttpClient::probe)
  const Sink* sink = nullptr;
  HttpClient* client = nullptr;
  CURL* handle = nullptr;
  // Headers of the latest response (a redirect's are replaced by the next one's).
  std::string content_range;
  std::string etag;
  std::string last_modified;
  std::string error_code;     // X-Error-Code (the Hugging Face Hub's reason for a 4xx)
  std::string bucket_region;  // x-amz-bucket-region (S3's answer to a request to a wrong region)
  std::string retry_after;    // Retry-After (a 503's or 429's wish)
  long status = 0;            // of the final response, once checked
  bool checked = false;       // the final response's status and headers were validated
  std::optional<Validators> seen;  // a probe's first valid answer: its resumptions must match
  std::uint64_t expected = 0;      // body bytes of the whole range, once an answer said
  std::uint64_t received = 0;      // body bytes passed to the sink, over every attempt
  std::optional<Error> failure;    // why on_body stopped the transfer
  std::array<char, CURL_ERROR_SIZE> curl_message{};
  // The attempts so far, the seconds waited between them, when the first began and when the
  // next one may begin.
  unsigned attempts = 0;
  double waited = 0;
  std::chrono::steady_clock::time_point first_start;
  std::chrono::steady_clock::time_point due;

  // The range the next attempt asks for: from the first byte not yet received.
  [[nodiscard]] std::uint64_t resume_offset() const noexcept { return want.offset + received; }
  // Forgets the last attempt's answer (what was received stays received).
  void clear_answer();
};

// "bytes FIRST-LAST: what", of kind http, naming the file as shown.
[[nodiscard]] Error http_error(const HttpClient::Transfer& t, const std::string& what);
// What a failed libcurl transfer means, in words.
[[nodiscard]] std::string curl_failure(const HttpClient::Transfer& t, CURLcode code,
                                       const RemoteOptions& options);
// Failures of the connection that another attempt may not meet: refused, reset, closed early,
// timed out.
[[nodiscard]] bool transient_failure(CURLcode code) noexcept;
// Validates the final response before any of its body is taken; sets t.status, t.expected and
// (a probe's first answer) t.seen.
[[nodiscard]] std::optional<Error> check_answer(HttpClient::Transfer& t);

// libcurl's callbacks; their user data is the Transfer.
std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user);
std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user);

}  // namespace onnxmap::remote
