#include "remote/http_client.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "onnxmap/error.hpp"
#include "onnxmap/version.hpp"
#include "remote/curl_api.hpp"

namespace onnxmap::remote {

struct HttpClient::Transfer {
  ByteRange want;
  std::size_t index = 0;
  bool probe = false;
  const Sink* sink = nullptr;
  HttpClient* client = nullptr;
  CURL* handle = nullptr;
  // Headers of the latest response (a redirect's are replaced by the next one's).
  std::string content_range;
  std::string etag;
  std::string last_modified;
  std::string error_code;     // X-Error-Code (the Hugging Face Hub's reason for a 4xx)
  std::string bucket_region;  // x-amz-bucket-region (S3's answer to a request to a wrong region)
  bool checked = false;       // the final response's status and headers were validated
  std::uint64_t expected = 0;
  std::uint64_t received = 0;
  std::optional<Error> failure;
  std::array<char, CURL_ERROR_SIZE> curl_message{};
};

namespace {

using Transfer = HttpClient::Transfer;

Error http_error(const Transfer& t, const std::string& what) {
  const std::uint64_t last = t.want.offset + std::max<std::uint64_t>(t.want.length, 1) - 1;
  return {ErrorKind::http,
          "bytes " + std::to_string(t.want.offset) + "-" + std::to_string(last) + ": " + what,
          t.want.offset,
          {},
          t.client->shown()};
}

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

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::string_view line(data, size * count);
  if (line.starts_with("HTTP/")) {
    t.content_range.clear();
    t.etag.clear();
    t.last_modified.clear();
    t.error_code.clear();
    t.bucket_region.clear();
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
  return size * count;
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

namespace {

// Validates the final response before any of its body is taken; sets t.expected.
std::optional<Error> check_answer(Transfer& t, const Validators& known, bool probed) {
  long status = 0;
  curl().easy_getinfo(t.handle, CURLINFO_RESPONSE_CODE, &status);
  if (status != 206) return http_error(t, status_text(t, status));
  const auto range = parse_content_range(t.content_range);
  if (!range) {
    return http_error(t, "206 without a valid Content-Range ('" + t.content_range + "')");
  }
  const std::uint64_t want_last =
      t.probe ? std::min(t.want.length, range->total) - 1 : t.want.offset + t.want.length - 1;
  if (probed && range->total != known.size) {
    return http_error(t, "the file's size changed on the server: " + std::to_string(known.size) +
                             " bytes, now " + std::to_string(range->total));
  }
  if (range->first != t.want.offset || range->last != want_last) {
    return http_error(t, "the server sent a different range ('" + t.content_range + "')");
  }
  if (probed && (t.etag != known.etag || t.last_modified != known.last_modified)) {
    return http_error(t, "the file changed on the server (ETag '" + known.etag + "' -> '" + t.etag +
                             "', Last-Modified '" + known.last_modified + "' -> '" +
                             t.last_modified + "')");
  }
  t.expected = range->last - range->first + 1;
  return std::nullopt;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  if (!t.checked) {
    t.checked = true;
    t.failure = check_answer(t, t.client->validators(), !t.probe);
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

}  // namespace

HttpSession::HttpSession() {
  CURLSH* share = curl().share_init();
  curl().share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl().share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
  share_ = share;
}

HttpSession::~HttpSession() {
  curl().share_cleanup(static_cast<CURLSH*>(share_));
}

HttpClient::HttpClient(Endpoint endpoint, const RemoteOptions& options, const HttpSession& session)
    : endpoint_(std::move(endpoint)),
      options_(options),
      session_(session),
      multi_(curl().multi_init()) {
  options_.connections = std::max(options_.connections, 1U);
  if (endpoint_.access.sigv4.empty()) return;
  // S3 wants the payload's hash in a header of its own (libcurl signs every x-amz-* header); a
  // GET has no payload to hash.
  const std::string token = "x-amz-security-token: " + endpoint_.access.session_token;
  for (const std::string& header : {std::string("x-amz-content-sha256: UNSIGNED-PAYLOAD"), token}) {
    if (header == token && endpoint_.access.session_token.empty()) continue;
    curl_slist* added = curl().slist_append(static_cast<curl_slist*>(headers_), header.c_str());
    if (added == nullptr) throw Error(ErrorKind::io, "out of memory for a request's headers");
    headers_ = added;
  }
}

HttpClient::~HttpClient() {
  curl().slist_free_all(static_cast<curl_slist*>(headers_));
  for (void* handle : idle_handles_) curl().easy_cleanup(static_cast<CURL*>(handle));
  curl().multi_cleanup(static_cast<CURLM*>(multi_));
}

std::vector<std::byte> HttpClient::probe(std::uint64_t length) {
  std::vector<std::byte> out;
  std::vector<std::unique_ptr<Transfer>> transfers;
  transfers.push_back(std::make_unique<Transfer>());
  transfers[0]->want = {0, length};
  transfers[0]->probe = true;
  const Sink sink = [&out](std::size_t, std::uint64_t, std::span<const std::byte> bytes) {
    out.insert(out.end(), bytes.begin(), bytes.end());
  };
  run(transfers, sink);
  return out;
}

void HttpClient::fetch(std::span<const ByteRange> ranges, const Sink& sink) {
  std::vector<std::unique_ptr<Transfer>> transfers;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].length == 0) continue;
    if (ranges[i].offset + ranges[i].length > validators_.size) {
      throw Error(ErrorKind::out_of_bounds,
                  "bytes " + std::to_string(ranges[i].offset) + "+" +
                      std::to_string(ranges[i].length) + " lie past the file's end (" +
                      std::to_string(validators_.size) + " bytes)",
                  ranges[i].offset, {}, endpoint_.shown);
    }
    transfers.push_back(std::make_unique<Transfer>());
    transfers.back()->want = ranges[i];
    transfers.back()->index = i;
  }
  run(transfers, sink);
}

void HttpClient::start(Transfer& t) {
  t.client = this;
  CURL* h = nullptr;
  if (idle_handles_.empty()) {
    h = curl().easy_init();
  } else {
    h = static_cast<CURL*>(idle_handles_.back());
    idle_handles_.pop_back();
    curl().easy_reset(h);  // keeps its live connections
  }
  t.handle = h;
  const std::string range =
      std::to_string(t.want.offset) + "-" + std::to_string(t.want.offset + t.want.length - 1);
  const std::string& url = endpoint_.url;
  const bool https = url.size() >= 8 && same_name(std::string_view(url).substr(0, 8), "https://");
  curl().easy_setopt(h, CURLOPT_URL, url.c_str());
  curl().easy_setopt(h, CURLOPT_SHARE, session_.share());
  curl().easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl().easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, https ? "https" : "http,https");
  curl().easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl().easy_setopt(h, CURLOPT_MAXREDIRS, static_cast<long>(options_.max_redirects));
  curl().easy_setopt(h, CURLOPT_RANGE, range.c_str());  // copied by libcurl
  curl().easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl().easy_setopt(h, CURLOPT_HEADERDATA, &t);
  curl().easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl().easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl().easy_setopt(h, CURLOPT_PRIVATE, &t);
  curl().easy_setopt(h, CURLOPT_ERRORBUFFER, t.curl_message.data());
  curl().easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  // Bodies arrive in large pieces: each becomes one write into the mirror.
  curl().easy_setopt(h, CURLOPT_BUFFERSIZE, 512L * 1024L);
  curl().easy_setopt(h, CURLOPT_CONNECTTIMEOUT, static_cast<long>(options_.timeout_seconds));
  curl().easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl().easy_setopt(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options_.timeout_seconds));
  curl().easy_setopt(h, CURLOPT_USERAGENT, "onnxmap/" ONNXMAP_VERSION);
  if (!options_.ca_file.empty()) curl().easy_setopt(h, CURLOPT_CAINFO, options_.ca_file.c_str());
  authenticate(h);
  curl().multi_add_handle(static_cast<CURLM*>(multi_), h);
}

void HttpClient::authenticate(void* handle) const {
  auto* h = static_cast<CURL*>(handle);
  const Access& access = endpoint_.access;
  // Without CURLOPT_UNRESTRICTED_AUTH, libcurl sends neither a bearer nor user and password to a
  // host other than the URL's (a redirect to a hub's storage).
  if (!access.bearer.empty()) {
    curl().easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
    curl().easy_setopt(h, CURLOPT_XOAUTH2_BEARER, access.bearer.c_str());
  }
  if (!access.sigv4.empty()) {
    // libcurl would send the custom headers (the session token) to wherever a redirect leads,
    // and S3 does not redirect a GET it can answer: a 3xx is an error (its status says so).
    curl().easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl().easy_setopt(h, CURLOPT_AWS_SIGV4, access.sigv4.c_str());
    curl().easy_setopt(h, CURLOPT_USERNAME, access.access_key_id.c_str());
    curl().easy_setopt(h, CURLOPT_PASSWORD, access.secret_access_key.c_str());
    curl().easy_setopt(h, CURLOPT_HTTPHEADER, static_cast<curl_slist*>(headers_));
  }
}

void HttpClient::finish(Transfer& t, int curl_code) {
  const auto code = static_cast<CURLcode>(curl_code);
  if (t.failure) throw *t.failure;
  if (code != CURLE_OK) throw http_error(t, curl_failure(t, code, options_));
  if (!t.checked) {  // an answer without a body: an error status, or an empty 206
    t.checked = true;
    if (auto failure = check_answer(t, validators_, !t.probe)) throw *failure;
  }
  if (t.received != t.expected) {
    throw http_error(t, "short body: " + std::to_string(t.received) + " of " +
                            std::to_string(t.expected) + " bytes");
  }
  if (t.probe) {
    validators_ = {parse_content_range(t.content_range)->total, t.etag, t.last_modified};
  }
}

// Runs every transfer, at most options_.connections at once; the first failure stops the rest.
void HttpClient::run(std::vector<std::unique_ptr<Transfer>>& transfers, const Sink& sink) {
  auto* multi = static_cast<CURLM*>(multi_);
  std::size_t next = 0;
  std::size_t active = 0;
  std::optional<Error> failure;
  const auto retire = [&](Transfer& t) {
    curl().multi_remove_handle(multi, t.handle);
    idle_handles_.push_back(t.handle);
    t.handle = nullptr;
    --active;
  };
  while ((next < transfers.size() && !failure) || active > 0) {
    while (!failure && next < transfers.size() &&
           active < static_cast<std::size_t>(options_.connections)) {
      transfers[next]->sink = &sink;
      start(*transfers[next++]);
      ++active;
    }
    int running = 0;
    curl().multi_perform(multi, &running);
    int left = 0;
    while (CURLMsg* message = curl().multi_info_read(multi, &left)) {
      if (message->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl().easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, &t);
      const CURLcode code = message->data.result;
      try {
        finish(*t, code);
      } catch (const Error& e) {
        if (!failure) failure = e;
      }
      retire(*t);
    }
    if (failure) {
      for (auto& t : transfers) {
        if (t->handle != nullptr) retire(*t);
      }
      break;
    }
    if (active > 0) curl().multi_poll(multi, nullptr, 0, 100, nullptr);
  }
  if (failure) throw *failure;
}

}  // namespace onnxmap::remote
