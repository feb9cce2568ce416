#pragma once
// The viewer's HTTP server: Boost.Beast over Asio, a few threads, every request bounded (header
// size, body size, time to arrive, connections at once). It knows nothing of models: each
// request goes to one handler, which answers it whole.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace onnxmap::cli::viewer {

struct HttpRequest {
  std::string method;                        // "GET", "POST", "DELETE", ...
  std::string path;                          // percent-decoded, without the query
  std::map<std::string, std::string> query;  // percent-decoded; "+" is a space
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  bool cacheable = false;  // the page's own files; API answers are never cached
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct ServerOptions {
  std::string host = "127.0.0.1";
  unsigned short port = 0;  // 0: a free port
  unsigned threads = 4;
  std::size_t max_connections = 64;  // more are closed as soon as accepted
  // A connection that sends no complete request for this long is closed (a slow or vanished
  // client holds no thread: reads are asynchronous).
  std::chrono::seconds idle_timeout{30};
  // The host names accepted in the Host header, each with the port bound ("localhost" accepts
  // "localhost:8417"): a web page elsewhere cannot reach a loopback server through a name it
  // controls (DNS rebinding). Empty: any.
  std::vector<std::string> allowed_hosts;
};

class HttpServer {
 public:
  // Binds and listens; throws onnxmap::Error (io) when the address cannot be bound, naming it.
  HttpServer(const ServerOptions& options, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  [[nodiscard]] unsigned short port() const noexcept;
  // Serves until stop() or SIGINT/SIGTERM.
  void run();
  void stop();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// "a%20b+c" -> "a b c" in a query ("+" kept in a path); nullopt-like: throws std::invalid_argument
// on a malformed escape.
[[nodiscard]] std::string percent_decode(std::string_view text, bool plus_is_space);
// The path and the query of a request target ("/api/x?a=1&b=2").
[[nodiscard]] HttpRequest parse_target(std::string method, std::string_view target);

}  // namespace onnxmap::cli::viewer
