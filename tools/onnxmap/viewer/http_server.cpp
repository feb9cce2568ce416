#include "http_server.hpp"

// Boost 1.74's Asio uses std::exchange without including <utility>.
#include <utility>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <csignal>
#include <optional>
#include <stdexcept>
#include <thread>

#include "onnxmap/error.hpp"

namespace onnxmap::cli::viewer {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// A viewer's requests are a line and a few headers; its bodies are empty.
constexpr std::size_t kHeaderLimit = 8 * 1024;
constexpr std::size_t kBodyLimit = 4 * 1024;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

struct Shared {
  ServerOptions options;
  HttpHandler handler;
  unsigned short port = 0;  // the port bound
  std::atomic<std::size_t> connections{0};
};

std::string_view to_std(beast::string_view s) {
  return {s.data(), s.size()};
}

HttpResponse error_response(unsigned status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = message + "\n";
  return r;
}

bool host_allowed(const Shared& shared, std::string_view host) {
  const auto& allowed = shared.options.allowed_hosts;
  const std::string port = ":" + std::to_string(shared.port);
  return allowed.empty() ||
         std::any_of(allowed.begin(), allowed.end(),
                     [&](const std::string& name) { return host == name + port; });
}

// The handler's answer to one request, or the server's own refusal.
HttpResponse answer(const Shared& shared, const http::request<http::string_body>& request) {
  if (!host_allowed(shared, to_std(request[http::field::host]))) {
    return error_response(403, "this server answers requests to its own address only");
  }
  try {
    return shared.handler(
        parse_target(std::string(request.method_string()), to_std(request.target())));
  } catch (const std::invalid_argument& e) {
    return error_response(400, e.what());
  } catch (const std::exception& e) {
    return error_response(500, std::string("internal error: ") + e.what());
  }
}

http::response<http::string_body> to_beast(const HttpResponse& r, bool keep_alive) {
  http::response<http::string_body> out{static_cast<http::status>(r.status), 11};
  out.set(http::field::server, "onnxmap view");
  out.set(http::field::content_type, r.content_type);
  out.set(http::field::cache_control, r.cacheable ? "max-age=3600" : "no-store");
  // The page runs its own files only, is never framed and sends no referrer (model URLs may
  // hold credentials).
  out.set("Content-Security-Policy",
          "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
  out.set("X-Content-Type-Options", "nosniff");
  out.set("Referrer-Policy", "no-referrer");
  out.keep_alive(keep_alive);
  out.body() = r.body;
  out.prepare_payload();
  return out;
}

// One connection: read a request, answer it, again while the client keeps it alive. Every read
// and write has a deadline, so a client that stalls or vanishes only ends its own connection.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<Shared> shared)
      : stream_(std::move(socket)), shared_(std::move(shared)) {}
  ~Session() { --shared_->connections; }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void read_next() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    stream_.expires_after(shared_->options.idle_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

 private:
  void on_read(beast::error_code ec) {
    const bool not_http =
        ec && ec != http::error::end_of_stream &&
        ec.category() == http::make_error_code(http::error::bad_method).category();
    if (ec == http::error::body_limit || ec == http::error::header_limit) {
      write(error_response(ec == http::error::body_limit ? 413 : 431, ec.message()), false);
    } else if (not_http) {
      write(error_response(400, "not an HTTP request: " + ec.message()), false);
    } else if (ec) {
      close();  // gone or silent: nobody to answer
    } else {
      const auto request = parser_->release();
      write(answer(*shared_, request), request.keep_alive());
    }
  }

  void write(const HttpResponse& response, bool keep_alive) {
    auto message =
        std::make_shared<http::response<http::string_body>>(to_beast(response, keep_alive));
    stream_.expires_after(shared_->options.idle_timeout);
    http::async_write(
        stream_, *message,
        [self = shared_from_this(), message, keep_alive](beast::error_code ec, std::size_t) {
          if (ec || !keep_alive) {
            self->close();
          } else {
            self->read_next();
          }
        });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_{kHeaderLimit + kBodyLimit};
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace

struct HttpServer::State {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::signal_set signals{io, SIGINT, SIGTERM};
  std::shared_ptr<Shared> shared = std::make_shared<Shared>();

  void accept_next() {
    acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec && shared->connections.fetch_add(1) < shared->options.max_connections) {
        std::make_shared<Session>(std::move(socket), shared)->read_next();
      } else if (!ec) {
        --shared->connections;  // over the limit: the socket closes as it goes out of scope
      }
      accept_next();
    });
  }
};

HttpServer::HttpServer(const ServerOptions& options, HttpHandler handler)
    : state_(std::make_unique<State>()) {
  state_->shared->options = options;
  state_->shared->handler = std::move(handler);
  const std::string where = options.host + ":" + std::to_string(options.port);
  beast::error_code ec;
  const auto address = asio::ip::make_address(options.host, ec);
  if (ec) throw Error(ErrorKind::invalid_argument, "not an IP address: " + options.host);
  const tcp::endpoint endpoint{address, options.port};
  auto& acceptor = state_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw Error(ErrorKind::io, "cannot listen on " + where + ": " + ec.message());
  state_->shared->port = acceptor.local_endpoint().port();
}

HttpServer::~HttpServer() = default;

unsigned short HttpServer::port() const noexcept {
  return state_->acceptor.local_endpoint().port();
}

void HttpServer::run() {
  state_->signals.async_wait([this](beast::error_code ec, int) {
    if (!ec) stop();
  });
  state_->accept_next();
  std::vector<std::thread> others;
  for (unsigned i = 1; i < state_->shared->options.threads; ++i) {
    others.emplace_back([this] { state_->io.run(); });
  }
  state_->io.run();
  for (auto& t : others) t.join();
}

void HttpServer::stop() {
  state_->io.stop();
}

std::string percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+' && plus_is_space) {
      out += ' ';
    } else if (c != '%') {
      out += c;
    } else {
      const int high = i + 2 < text.size() ? hex_digit(text[i + 1]) : -1;
      const int low = high >= 0 ? hex_digit(text[i + 2]) : -1;
      if (low < 0) throw std::invalid_argument("a malformed %-escape in the request's URL");
      out += static_cast<char>(high * 16 + low);
      i += 2;
    }
  }
  return out;
}

HttpRequest parse_target(std::string method, std::string_view target) {
  HttpRequest request;
  request.method = std::move(method);
  const auto question = target.find('?');
  request.path = percent_decode(target.substr(0, question), false);
  if (question == std::string_view::npos) return request;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const auto eq = pair.find('=');
    const std::string key = percent_decode(pair.substr(0, eq), true);
    request.query[key] =
        eq == std::string_view::npos ? "" : percent_decode(pair.substr(eq + 1), true);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
  }
  return request;
}

}  // namespace onnxmap::cli::viewer
