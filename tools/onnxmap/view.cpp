// onnxmap view MODEL: a local web server with a page to look at the model (view/).

#include <spawn.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "load_mode_option.hpp"
#include "onnxmap/onnxmap.hpp"
#include "remote_flags.hpp"
#include "verbs.hpp"
#include "viewer/http_server.hpp"
#include "viewer/view_api.hpp"

extern char** environ;

namespace onnxmap::cli {

namespace {

// Where the viewer listens when --port is not given; a free port when it is taken.
constexpr unsigned short kDefaultViewPort = 8417;

struct ViewArgs {
  std::string model;
  std::string host = "127.0.0.1";
  unsigned short port = kDefaultViewPort;
  bool port_given = false;
  bool no_browser = false;
  double layout_seconds = 5;
  LoadModeOption load;
  RemoteOptions remote;
};

bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "::1" || host.starts_with("127.");
}

// What the page calls the model: a URL as shown_url shows it (no user, password or query, which
// may hold credentials), or the file's name.
std::string source_name(const std::string& model) {
  if (is_url(model)) return shown_url(model);
  return std::filesystem::path(model).filename().string();
}

// The names a loopback server answers to in the Host header; any for a server on the network.
std::vector<std::string> allowed_hosts(const std::string& host) {
  if (!is_loopback(host)) return {};
  return {host.find(':') != std::string::npos ? "[" + host + "]" : host, "localhost"};
}

void open_browser(const std::string& url) {
  if (std::getenv("DISPLAY") == nullptr && std::getenv("WAYLAND_DISPLAY") == nullptr) return;
  pid_t pid = 0;
  const char* argv[] = {"xdg-open", url.c_str(), nullptr};
  // Best effort: without xdg-open the URL printed above is the way in.
  (void)::posix_spawnp(&pid, "xdg-open", nullptr, nullptr, const_cast<char* const*>(argv), environ);
}

std::unique_ptr<viewer::HttpServer> listen(const ViewArgs& args, viewer::ViewApi& api) {
  viewer::ServerOptions options;
  options.host = args.host;
  options.port = args.port;
  options.allowed_hosts = allowed_hosts(args.host);
  const auto handler = [&api](const viewer::HttpRequest& r) { return api.handle(r); };
  try {
    return std::make_unique<viewer::HttpServer>(options, handler);
  } catch (const Error&) {
    if (args.port_given || args.port == 0) throw;
  }
  options.port = 0;  // the default port is taken (another viewer?): any free one
  return std::make_unique<viewer::HttpServer>(options, handler);
}

int run_view(const ViewArgs& args) {
  OpenOptions options;
  options.mode = args.load.mode();
  options.remote = args.remote;
  options.collect_payload_errors = true;  // a model with a broken tensor is still shown
  viewer::LayoutOptions layout;
  layout.time_limit = std::chrono::milliseconds(static_cast<long>(args.layout_seconds * 1000));
  viewer::ViewApi api(Model::open(args.model, options), source_name(args.model), layout);
  const auto server = listen(args, api);
  const std::string host =
      args.host.find(':') != std::string::npos ? "[" + args.host + "]" : args.host;
  const std::string url = "http://" + host + ":" + std::to_string(server->port()) + "/";
  std::cout << "onnxmap view: " << source_name(args.model) << " at " << url << "  (Ctrl-C stops)"
            << std::endl;
  if (!is_loopback(args.host)) {
    std::cerr << "onnxmap view: listening on " << args.host
              << ": anyone who can reach this address can read the model" << std::endl;
  }
  if (!args.no_browser) open_browser(url);
  server->run();
  return kExitOk;
}

}  // namespace

void add_view_verb(CLI::App& app) {
  auto args = std::make_shared<ViewArgs>();
  CLI::App* sub = app.add_subcommand("view", "Look at the model in a web browser (a local server)");
  sub->add_option("MODEL", args->model, "the .onnx file or its URL (http, https, s3, hf)")
      ->required();
  add_remote_flags(sub, args->remote);
  sub->add_option_function<unsigned short>(
      "--port", [args](unsigned short port) { args->port = port, args->port_given = true; },
      "the port to listen on (default 8417, or a free one when it is taken; 0: a free one)");
  sub->add_option("--host", args->host,
                  "the address to listen on (default 127.0.0.1: this machine only; another "
                  "address serves the model to the network)");
  sub->add_flag("--no-browser", args->no_browser, "only print the URL");
  sub->add_option("--layout-time-limit", args->layout_seconds,
                  "seconds Graphviz may take to lay out one drawing of the graph page; past "
                  "them its boxes are drawn in a column, with a note (default 5)")
      ->check(CLI::Range(0.01, 3600.0));
  add_load_mode_option(sub, args->load);
  add_verb(sub, [args] { return run_view(*args); });
}

}  // namespace onnxmap::cli
