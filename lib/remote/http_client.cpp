#include "remote/http_client.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <string_view>

#include "onnxmap/version.hpp"
#include "remote/curl_api.hpp"
#include "remote/http_transfer.hpp"

namespace onnxmap::remote {

namespace {

using Transfer = HttpClient::Transfer;
using Clock = std::chrono::steady_clock;

bool is_https(std::string_view url) {
  constexpr std::string_view kScheme = "https://";
  return url.size() >= kScheme.size() &&
         std::ranges::equal(url.substr(0, kScheme.size()), kScheme, [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == y;
         });
}

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// "bytes ...: the server answered HTTP 503 (5 attempts over 7.2 s)": the last answer, and what
// was tried before giving up.
Error final_failure(const Transfer& t, const Error& last) {
  if (t.attempts <= 1) return last;
  std::array<char, 32> elapsed{};
  std::snprintf(elapsed.data(), elapsed.size(), "%.1f",
                seconds_between(t.first_start, Clock::now()));
  return {last.kind(),
          last.detail() + " (" + std::to_string(t.attempts) + " attempts over " + elapsed.data() +
              " s)",
          last.offset(), last.field_path(), last.file()};
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

FetchStats HttpSession::totals() const noexcept {
  return {requests_.load(), retries_.load(), retry_wait_ms_.load()};
}

void HttpSession::count(const FetchStats& stats) const noexcept {
  requests_ += stats.requests;
  retries_ += stats.retries;
  retry_wait_ms_ += stats.retry_wait_ms;
}

HttpClient::HttpClient(Endpoint endpoint, const RemoteOptions& options, const HttpSession& session)
    : endpoint_(std::move(endpoint)),
      options_(options),
      session_(session),
      multi_(curl().multi_init()),
      retry_policy_(options),
      random_(std::random_device{}()) {
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
  (void)run(transfers, sink);
  return out;
}

FetchStats HttpClient::fetch(std::span<const ByteRange> ranges, const Sink& sink) {
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
  return run(transfers, sink);
}

// Starts the transfer's next attempt, for the bytes it has not received yet.
void HttpClient::start(Transfer& t) {
  t.client = this;
  if (t.attempts++ == 0) t.first_start = Clock::now();
  t.clear_answer();
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
      std::to_string(t.resume_offset()) + "-" + std::to_string(t.want.offset + t.want.length - 1);
  const std::string& url = endpoint_.url;
  curl().easy_setopt(h, CURLOPT_URL, url.c_str());
  curl().easy_setopt(h, CURLOPT_SHARE, session_.share());
  curl().easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl().easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, is_https(url) ? "https" : "http,https");
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

// Ends an attempt: nullopt when the transfer is complete, the error when another attempt may
// succeed (a transient status, a dropped or stalled connection, a short body). Throws the
// errors no retry can mend.
std::optional<Error> HttpClient::finish(Transfer& t, int curl_code) {
  const auto code = static_cast<CURLcode>(curl_code);
  if (t.failure) {
    if (transient_status(t.status)) return t.failure;
    throw *t.failure;
  }
  if (code != CURLE_OK) {
    Error error = http_error(t, curl_failure(t, code, options_));
    if (transient_failure(code)) return error;
    throw error;
  }
  if (!t.checked) {  // an answer without a body: an error status, or an empty 206
    t.checked = true;
    if (auto failure = check_answer(t)) {
      if (transient_status(t.status)) return failure;
      throw *failure;
    }
  }
  if (t.received != t.expected) {
    return http_error(t, "short body: " + std::to_string(t.received) + " of " +
                             std::to_string(t.expected) + " bytes");
  }
  if (t.probe) validators_ = *t.seen;
  return std::nullopt;
}

// Sets when the transfer's next attempt may start, or returns false when it may not try again.
bool HttpClient::schedule_retry(Transfer& t, FetchStats& stats) {
  std::optional<double> asked;
  if (!t.retry_after.empty()) asked = retry_after_seconds(t.retry_after, std::time(nullptr));
  const double unit = std::uniform_real_distribution<double>(0.0, 1.0)(random_);
  const auto wait = retry_policy_.next_wait(t.attempts, t.waited, asked, unit);
  if (!wait) return false;
  t.waited += *wait;
  t.due = Clock::now() +
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*wait));
  ++stats.retries;
  stats.retry_wait_ms += static_cast<std::uint64_t>(*wait * 1000.0 + 0.5);
  return true;
}

// Runs every transfer, at most options_.connections at once, retries first when they are due;
// the first failure that may not be tried again stops the rest.
FetchStats HttpClient::run(std::vector<std::unique_ptr<Transfer>>& transfers, const Sink& sink) {
  auto* multi = static_cast<CURLM*>(multi_);
  std::size_t next = 0;
  std::size_t active = 0;
  std::vector<Transfer*> waiting;  // to be tried again at their `due` time
  std::optional<Error> failure;
  FetchStats stats;
  const auto retire = [&](Transfer& t) {
    curl().multi_remove_handle(multi, t.handle);
    idle_handles_.push_back(t.handle);
    t.handle = nullptr;
    --active;
  };
  const auto launch = [&](Transfer& t) {
    t.sink = &sink;
    start(t);
    ++active;
    ++stats.requests;
  };
  while (!failure && (next < transfers.size() || !waiting.empty() || active > 0)) {
    const Clock::time_point now = Clock::now();
    while (active < static_cast<std::size_t>(options_.connections)) {
      const auto due = std::ranges::find_if(waiting, [now](Transfer* t) { return t->due <= now; });
      if (due != waiting.end()) {
        Transfer& t = **due;
        waiting.erase(due);
        launch(t);
      } else if (next < transfers.size()) {
        launch(*transfers[next++]);
      } else {
        break;
      }
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
        const std::optional<Error> transient = finish(*t, code);
        if (transient && !schedule_retry(*t, stats)) throw final_failure(*t, *transient);
        if (transient) waiting.push_back(t);
      } catch (const Error& e) {
        if (!failure) failure = e;
      }
      retire(*t);
    }
    if (failure) break;
    // Sleeps until a socket is ready, at most 100 ms, or until the first retry is due.
    int timeout_ms = 100;
    for (const Transfer* t : waiting) {
      const auto until = std::chrono::ceil<std::chrono::milliseconds>(t->due - Clock::now());
      timeout_ms = std::clamp(static_cast<int>(until.count()), 0, timeout_ms);
    }
    if (active > 0 || !waiting.empty()) curl().multi_poll(multi, nullptr, 0, timeout_ms, nullptr);
  }
  for (auto& t : transfers) {
    if (t->handle != nullptr) retire(*t);
  }
  session_.count(stats);
  if (failure) throw *failure;
  return stats;
}

}  // namespace onnxmap::remote
