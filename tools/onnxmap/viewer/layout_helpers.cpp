// Layouts in helper processes (layout_helpers.hpp).

#include "layout_helpers.hpp"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "layered_layout.hpp"
#include "layout_protocol.hpp"
#include "onnxmap/error.hpp"

extern char** environ;

namespace onnxmap::cli::viewer {

namespace {

using Clock = std::chrono::steady_clock;

void end_helper(pid_t pid, int fd) {
  ::kill(pid, SIGKILL);
  ::close(fd);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// Starts `command` with one end of a socket pair as its standard input and output and nothing
// else of this process open; the other end in `fd`. Returns the pid, or -1 with `why` set.
pid_t spawn(const std::vector<std::string>& command, int& fd, std::string& why) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    why = std::string("no socket for a layout helper: ") + std::strerror(errno);
    return -1;
  }
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_adddup2(&files, ends[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&files, ends[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&files, STDERR_FILENO + 1);
  // The viewer's signal handlers and mask are not the helper's.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (const int s : {SIGINT, SIGTERM, SIGPIPE, SIGHUP}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int failed = ::posix_spawn(&pid, argv[0], &files, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attributes);
  ::close(ends[1]);
  if (failed != 0) {
    ::close(ends[0]);
    why = "the layout helper " + command[0] + " did not start: " + std::strerror(failed);
    return -1;
  }
  fd = ends[0];
  return pid;
}

// Whether an idle helper is still there: nothing to read and no hang-up on its socket.
bool still_there(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

LayoutResult simpler(const LayoutInput& in, std::string note) {
  LayoutResult out = layered_layout(in);
  out.note = std::move(note);
  return out;
}

std::string seconds(std::chrono::milliseconds ms) {
  if (ms.count() < 1000) return std::to_string(ms.count()) + " ms";
  const auto tenths = (ms.count() + 50) / 100;
  return std::to_string(tenths / 10) + (tenths % 10 != 0 ? "." + std::to_string(tenths % 10) : "") +
         " s";
}

}  // namespace

std::vector<std::string> self_helper_command() {
  return {"/proc/self/exe", std::string(kLayoutHelperVerb)};
}

LayoutHelpers::LayoutHelpers(LayoutHelperOptions options) : options_(std::move(options)) {
  options_.max_helpers = std::max<std::size_t>(options_.max_helpers, 1);
}

LayoutHelpers::~LayoutHelpers() {
  for (const Helper& h : idle_) end_helper(h.pid, h.fd);
}

std::vector<pid_t> LayoutHelpers::helper_pids() const {
  const std::lock_guard lock(mutex_);
  std::vector<pid_t> pids = busy_;
  for (const Helper& h : idle_) pids.push_back(h.pid);
  return pids;
}

// Takes an idle helper that is still alive, or starts one where fewer than max_helpers run,
// or waits for one until the deadline.
bool LayoutHelpers::acquire(Helper& helper, Clock::time_point deadline, std::string& why) {
  std::unique_lock lock(mutex_);
  for (;;) {
    while (!idle_.empty()) {
      helper = idle_.back();
      idle_.pop_back();
      if (still_there(helper.fd)) {
        busy_.push_back(helper.pid);
        return true;
      }
      end_helper(helper.pid, helper.fd);  // died while idle: not this drawing's fault
    }
    if (busy_.size() < options_.max_helpers) break;
    if (!idle_changed_.wait_until(lock, deadline, [&] {
          return !idle_.empty() || busy_.size() < options_.max_helpers;
        })) {
      why = "every layout helper was busy for " + seconds(options_.time_limit);
      return false;
    }
  }
  helper = Helper{};
  helper.pid = spawn(options_.command, helper.fd, why);
  if (helper.pid < 0) return false;
  busy_.push_back(helper.pid);
  return true;
}

void LayoutHelpers::release(Helper helper, bool healthy) {
  const bool keep = healthy && helper.layouts < options_.layouts_per_helper;
  if (!keep) end_helper(helper.pid, helper.fd);  // outside the lock: waits for the exit
  {
    const std::lock_guard lock(mutex_);
    busy_.erase(std::find(busy_.begin(), busy_.end(), helper.pid));
    if (keep) idle_.push_back(helper);
  }
  idle_changed_.notify_one();
}

LayoutResult LayoutHelpers::in_process(const LayoutInput& in) {
  try {
    return layout_graph(in);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::io) throw;
    return simpler(in, std::string("Graphviz failed (") + e.what() + "): a simpler drawing");
  }
}

LayoutResult LayoutHelpers::layout(const LayoutInput& in) {
  check_layout_input(in);
  if (in.boxes.empty()) return {};
  if (options_.command.empty()) return in_process(in);
  const Clock::time_point deadline = Clock::now() + options_.time_limit;
  Helper helper;
  std::string why;
  if (!acquire(helper, deadline, why)) return simpler(in, why + ": a simpler drawing");
  std::optional<std::vector<std::uint8_t>> answer;
  if (write_frame(helper.fd, encode_input(in), deadline)) answer = read_frame(helper.fd, deadline);
  if (!answer) {
    const bool late = Clock::now() >= deadline;
    release(helper, false);
    return simpler(in, late ? "Graphviz took longer than " + seconds(options_.time_limit) +
                                  " to lay this level out: a simpler drawing"
                            : "Graphviz's layout process ended unexpectedly: a simpler drawing");
  }
  ++helper.layouts;
  try {
    LayoutResult out = decode_answer(*answer);
    const bool whole = out.boxes.size() == in.boxes.size() &&
                       out.clusters.size() == in.clusters.size() &&
                       out.edges.size() == in.edges.size();
    release(helper, whole);
    if (!whole) return simpler(in, "Graphviz's layout process answered garbled: a simpler drawing");
    return out;
  } catch (const std::exception& e) {  // Graphviz failed, or the answer is not CBOR
    release(helper, false);
    return simpler(in, std::string("Graphviz failed (") + e.what() + "): a simpler drawing");
  }
}

}  // namespace onnxmap::cli::viewer
