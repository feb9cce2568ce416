#include "remote/http_transfer.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string_view>

namespace onnxmap::remote {

using Transfer = HttpClient::Transfer;

void Transfer::clear_answer() {
  content_range.clear();
  etag.clear();
  last_modified.clear();
  error_code.clear();
  bucket_region.clear();
  retry_after.clear();
  status = 0;
  checked = false;
  failure.reset();
  curl_message[0] = '\0';
}

Error http_error(const Transfer& t, const std::string& what) {
  const std::uint64_t last = t.want.offset + std::max<std::uint64_t>(t.want.length, 1) - 1;
  return {ErrorKind::http,
          "bytes " + std::to_string(t.want.offset) + "-" + std::to_string(last) + ": " + what,
          t.want.offset,
          {},
          t.client->shown()};
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool same_name(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

struct ContentRange {
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  std::uint64_t total = 0;
};

std::optional<std::uint64_t> number(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// "bytes FIRST-LAST/TOTAL" with a known total, as RFC 9110 writes a satisfied range.
std::optional<ContentRange> parse_content_range(std::string_view text) {
  if (!text.starts_with("bytes ")) return std::nullopt;
  text.remove_prefix(6);
  const std::size_t dash = text.find('-');
  const std::size_t slash = text.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) {
    return std::nullopt;
  }
  const auto first = number(text.substr(0, dash));
  const auto last = number(text.substr(dash + 1, slash - dash - 1));
  const auto total = number(text.substr(slash + 1));
  if (!first || !last || !total || *first > *last || *last >= *total) return std::nullopt;
  return ContentRange{*first, *last, *total};
}

// Printable ASCII only: a header's value from a hostile server goes into a message.
std::string printable(std::string_view value) {
  std::string out;
  for (const char c : value) out += c >= 0x20 && c < 0x7f ? c : '?';
  return out;
}

// The status, and what the answer's headers say about it (the Hub's error code; S3's region).
std::string status_text(const Transfer& t, long status) {
  std::string text = "the server answered HTTP " + std::to_string(status);
  if (!t.error_code.empty()) text += " " + printable(t.error_code);
  if (!t.bucket_region.empty() && status != 206) {
    text += " (the bucket is in region " + printable(t.bucket_region) + ": set AWS_REGION)";
  }
  if (status == 200) {
    return text +
           " with the whole file to a range request (Range ignored); refusing to "
           "download it";
  }
  if (status == 404) return text + " (not found)";
  if (status == 401 || status == 403) return text + " (access denied)";
  if (status == 416) return text + " (range not satisfiable: the file is shorter)";
  return text;
}

}  // namespace

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::string_view line(data, size * count);
  if (line.starts_with("HTTP/")) {
    t.clear_answer();
    return size * count;
  }
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return size * count;
  const std::string_view name = trim(line.substr(0, colon));
  const std::string value(trim(line.substr(colon + 1)));
  if (same_name(name, "content-range")) t.content_range = value;
  if (same_name(name, "etag")) t.etag = value;
  if (same_name(name, "last-modified")) t.last_modified = value;
  if (same_name(name, "x-error-code")) t.error_code = value.substr(0, 64);
  if (same_name(name, "x-amz-bucket-region")) t.bucket_region = value.substr(0, 64);
  if (same_name(name, "retry-after")) t.retry_after = value.substr(0, 64);
  return size * count;
}

std::optional<Error> check_answer(Transfer& t) {
  curl().easy_getinfo(t.handle, CURLINFO_RESPONSE_CODE, &t.status);
  if (t.status != 206) return http_error(t, status_text(t, t.status));
  const auto range = parse_content_range(t.content_range);
  if (!range) {
    return http_error(t, "206 without a valid Content-Range ('" + t.content_range + "')");
  }
  // A probe compares with its own first answer (none before it: it learns the validators).
  const Validators* known = t.probe ? (t.seen ? &*t.seen : nullptr) : &t.client->validators();
  if (known != nullptr && range->total != known->size) {
    return http_error(t, "the file's size changed on the server: " + std::to_string(known->size) +
                             " bytes, now " + std::to_string(range->total));
  }
  const std::uint64_t want_last =
      t.probe ? std::min(t.want.length, range->total) - 1 : t.want.offset + t.want.length - 1;
  if (range->first != t.resume_offset() || range->last != want_last) {
    return http_error(t, "the server sent a different range ('" + t.content_range + "')");
  }
  if (known != nullptr && (t.etag != known->etag || t.last_modified != known->last_modified)) {
    return http_error(t, "the file changed on the server (ETag '" + known->etag + "' -> '" +
                             t.etag + "', Last-Modified '" + known->last_modified + "' -> '" +
                             t.last_modified + "')");
  }
  if (t.probe && !t.seen) t.seen = Validators{range->total, t.etag, t.last_modified};
  t.expected = range->last - t.want.offset + 1;
  return std::nullopt;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  if (!t.checked) {
    t.checked = true;
    t.failure = check_answer(t);
    if (t.failure) return 0;  // aborts the transfer: not one more byte of a refused answer
  }
  if (t.received + n > t.expected) {
    t.failure = http_error(t, "the body is longer than its Content-Range");
    return 0;
  }
  try {
    (*t.sink)(t.index, t.want.offset + t.received, std::as_bytes(std::span(data, n)));
  } catch (const Error& e) {
    t.failure = e;
    return 0;
  }
  t.received += n;
  return n;
}

std::string curl_failure(const Transfer& t, CURLcode code, const RemoteOptions& options) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return "no progress for " + std::to_string(options.timeout_seconds) + " s (timed out)";
    case CURLE_TOO_MANY_REDIRECTS:
      return "more than " + std::to_string(options.max_redirects) + " redirects";
    case CURLE_UNSUPPORTED_PROTOCOL:
      return "a redirect to a scheme that is not allowed (https never goes to http)";
    case CURLE_PARTIAL_FILE:
      return "short body: the connection closed after " + std::to_string(t.received) + " of " +
             std::to_string(t.expected) + " bytes";
    default: break;
  }
  std::string text = curl().easy_strerror(code);
  if (t.curl_message[0] != '\0') text += std::string(": ") + t.curl_message.data();
  return text;
}

bool transient_failure(CURLcode code) noexcept {
  switch (code) {
    case CURLE_COULDNT_CONNECT:     // refused (or no route)
    case CURLE_SEND_ERROR:          // reset while sending
    case CURLE_RECV_ERROR:          // reset while receiving
    case CURLE_GOT_NOTHING:         // closed before an answer
    case CURLE_PARTIAL_FILE:        // closed inside the body
    case CURLE_OPERATION_TIMEDOUT:  // no progress for timeout_seconds
    case CURLE_HTTP2:               // a stream or connection the server reset
    case CURLE_HTTP2_STREAM: return true;
    default: return false;
  }
}

}  // namespace onnxmap::remote
