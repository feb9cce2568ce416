// The viewer's talk with a layout helper (layout_protocol.hpp), and the helper's side of it.

#include "layout_protocol.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <thread>

#include "onnxmap/error.hpp"

namespace onnxmap::cli::viewer {

namespace {

using Clock = std::chrono::steady_clock;
using Deadline = std::optional<Clock::time_point>;

nlohmann::json rect_json(const Rect& r) {
  return {r.x, r.y, r.width, r.height};
}

Rect rect_of(const nlohmann::json& j) {
  return {j.at(0).get<double>(), j.at(1).get<double>(), j.at(2).get<double>(),
          j.at(3).get<double>()};
}

// Waits until `fd` is ready for `events`; false past the deadline or when it hung up without
// being readable.
bool wait_for(int fd, short events, Deadline deadline) {
  for (;;) {
    int timeout = -1;
    if (deadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
      if (left.count() <= 0) return false;
      timeout = static_cast<int>(left.count());
    }
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, timeout);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    return (p.revents & events) != 0;
  }
}

// send() where `fd` is a socket (no SIGPIPE when the peer is gone), write() otherwise.
ssize_t put(int fd, const std::uint8_t* data, std::size_t size, bool nonblocking) {
  const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL | (nonblocking ? MSG_DONTWAIT : 0));
  if (n < 0 && errno == ENOTSOCK) return ::write(fd, data, size);
  return n;
}

bool write_all(int fd, const std::uint8_t* data, std::size_t size, Deadline deadline) {
  while (size > 0) {
    if (!wait_for(fd, POLLOUT, deadline)) return false;
    const ssize_t n = put(fd, data, size, deadline.has_value());
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool read_all(int fd, std::uint8_t* data, std::size_t size, Deadline deadline) {
  while (size > 0) {
    if (!wait_for(fd, POLLIN, deadline)) return false;
    const ssize_t n = ::read(fd, data, size);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

std::vector<std::uint8_t> encode_input(const LayoutInput& in) {
  nlohmann::json boxes = nlohmann::json::array(), clusters = nlohmann::json::array(),
                 edges = nlohmann::json::array();
  for (const LayoutBox& b : in.boxes) boxes.push_back({b.width, b.height, b.cluster});
  for (const LayoutCluster& c : in.clusters) clusters.push_back(c.parent);
  for (const LayoutEdge& e : in.edges) edges.push_back({e.from, e.to});
  return nlohmann::json::to_cbor({{"boxes", boxes}, {"clusters", clusters}, {"edges", edges}});
}

LayoutInput decode_input(const std::vector<std::uint8_t>& frame) {
  const nlohmann::json j = nlohmann::json::from_cbor(frame);
  LayoutInput in;
  for (const auto& b : j.at("boxes")) {
    in.boxes.push_back({b.at(0).get<double>(), b.at(1).get<double>(), b.at(2).get<int>()});
  }
  for (const auto& c : j.at("clusters")) in.clusters.push_back({c.get<int>()});
  for (const auto& e : j.at("edges")) {
    in.edges.push_back({e.at(0).get<std::size_t>(), e.at(1).get<std::size_t>()});
  }
  return in;
}

std::vector<std::uint8_t> encode_answer(const LayoutResult& r, const std::string& error) {
  if (!error.empty()) return nlohmann::json::to_cbor({{"error", error}});
  nlohmann::json boxes = nlohmann::json::array(), clusters = nlohmann::json::array(),
                 edges = nlohmann::json::array();
  for (const Rect& b : r.boxes) boxes.push_back(rect_json(b));
  for (const Rect& c : r.clusters) clusters.push_back(rect_json(c));
  for (const auto& curve : r.edges) {
    nlohmann::json points = nlohmann::json::array();
    for (const Point& p : curve) points.push_back(p.x), points.push_back(p.y);
    edges.push_back(std::move(points));
  }
  return nlohmann::json::to_cbor({{"width", r.width},
                                  {"height", r.height},
                                  {"way", r.way},
                                  {"boxes", boxes},
                                  {"clusters", clusters},
                                  {"edges", edges}});
}

LayoutResult decode_answer(const std::vector<std::uint8_t>& frame) {
  const nlohmann::json j = nlohmann::json::from_cbor(frame);
  if (j.contains("error")) throw Error(ErrorKind::io, j.at("error").get<std::string>());
  LayoutResult r;
  r.width = j.at("width").get<double>();
  r.height = j.at("height").get<double>();
  r.way = j.at("way").get<std::string>();
  for (const auto& b : j.at("boxes")) r.boxes.push_back(rect_of(b));
  for (const auto& c : j.at("clusters")) r.clusters.push_back(rect_of(c));
  for (const auto& points : j.at("edges")) {
    std::vector<Point>& curve = r.edges.emplace_back();
    for (std::size_t k = 0; k + 1 < points.size(); k += 2) {
      curve.push_back({points[k].get<double>(), points[k + 1].get<double>()});
    }
  }
  return r;
}

bool write_frame(int fd, const std::vector<std::uint8_t>& frame, Deadline deadline) {
  if (frame.size() > kMaxFrameBytes) return false;
  const auto size = static_cast<std::uint32_t>(frame.size());
  const std::uint8_t header[4] = {
      static_cast<std::uint8_t>(size), static_cast<std::uint8_t>(size >> 8U),
      static_cast<std::uint8_t>(size >> 16U), static_cast<std::uint8_t>(size >> 24U)};
  return write_all(fd, header, 4, deadline) && write_all(fd, frame.data(), frame.size(), deadline);
}

std::optional<std::vector<std::uint8_t>> read_frame(int fd, Deadline deadline) {
  std::uint8_t header[4];
  if (!read_all(fd, header, 4, deadline)) return std::nullopt;
  const std::uint32_t size = header[0] | (header[1] << 8U) | (header[2] << 16U) |
                             (static_cast<std::uint32_t>(header[3]) << 24U);
  if (size > kMaxFrameBytes) return std::nullopt;
  std::vector<std::uint8_t> frame(size);
  if (!read_all(fd, frame.data(), size, deadline)) return std::nullopt;
  return frame;
}

int serve_layouts() {
  std::signal(SIGPIPE, SIG_IGN);
  // A helper mid-layout when its viewer is gone would run on for as long as dot takes: it
  // watches for a new parent and leaves.
  const pid_t viewer = ::getppid();
  std::thread([viewer] {
    while (::getppid() == viewer) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ::_exit(0);
  }).detach();
  while (const auto frame = read_frame(STDIN_FILENO, std::nullopt)) {
    std::vector<std::uint8_t> answer;
    try {
      answer = encode_answer(layout_graph(decode_input(*frame)), "");
    } catch (const std::exception& e) {
      answer = encode_answer({}, e.what());
    }
    if (!write_frame(STDOUT_FILENO, answer, std::nullopt)) return 1;
  }
  return 0;
}

}  // namespace onnxmap::cli::viewer
