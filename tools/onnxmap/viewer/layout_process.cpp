// A program run with a deadline (layout_process.hpp): posix_spawn, poll, kill.

#include "layout_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace onnxmap::cli::viewer {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxErrorText = 2000;  // bytes of standard error kept

// A descriptor closed when it goes out of scope.
class Descriptor {
 public:
  Descriptor() = default;
  ~Descriptor() { reset(); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  [[nodiscard]] int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// The child's standard input is a socket, not a pipe: the viewer writes to it with
// MSG_NOSIGNAL, so a child that exits before reading everything cannot raise SIGPIPE here.
struct Channels {
  Descriptor input, output, error;  // this process's ends, non-blocking
  Descriptor child_input, child_output, child_error;

  void close_child_ends() {
    child_input.reset();
    child_output.reset();
    child_error.reset();
  }
  void close_own_ends() {
    input.reset();
    output.reset();
    error.reset();
  }
};

// Makes a pair of connected descriptors (by `make`) into `ours` and `theirs`.
template <typename Make>
bool connect(Descriptor& ours, Descriptor& theirs, Make make, std::string& why) {
  int ends[2];
  if (make(ends) != 0) {
    why = std::string("no pipe for a child process: ") + std::strerror(errno);
    return false;
  }
  ours.reset(ends[0]);
  theirs.reset(ends[1]);
  return true;
}

bool open_channels(Channels& c, std::string& why) {
  const auto socket = [](int* ends) {
    return ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, ends);
  };
  const auto pipe = [](int* ends) { return ::pipe2(ends, O_CLOEXEC); };
  if (!connect(c.input, c.child_input, socket, why) ||
      !connect(c.output, c.child_output, pipe, why) ||
      !connect(c.error, c.child_error, pipe, why)) {
    return false;
  }
  ::shutdown(c.input.get(), SHUT_RD);
  for (const int fd : {c.output.get(), c.error.get()}) ::fcntl(fd, F_SETFL, O_NONBLOCK);
  // The child's end of the socket blocks, as a program expects of its standard input.
  ::fcntl(c.child_input.get(), F_SETFL, 0);
  return true;
}

pid_t spawn(const std::vector<std::string>& command, const Channels& c, std::string& why) {
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_adddup2(&files, c.child_input.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&files, c.child_output.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&files, c.child_error.get(), STDERR_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&files, STDERR_FILENO + 1);
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
  const int failed = ::posix_spawnp(&pid, argv[0], &files, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attributes);
  if (failed != 0) {
    why = command[0] + " did not start: " + std::strerror(failed);
    return -1;
  }
  return pid;
}

// Reads what `fd` has now into `to`, keeping at most `limit` bytes, and closes `fd` at its end
// of file. Returns false where more than `limit` bytes have come.
bool drain(Descriptor& fd, std::string& to, std::size_t limit) {
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0) {
      fd.reset();  // the end, or an error: nothing more comes
      return true;
    }
    const auto count = static_cast<std::size_t>(n);
    if (to.size() + count > limit) {
      to.append(chunk, limit - to.size());
      return false;
    }
    to.append(chunk, count);
  }
}

// Feeds `input` and collects the output until the child closes both its outputs; false where
// the deadline passed first or the output grew past kMaxProcessOutput.
bool exchange(Channels& c, std::string_view input, ProcessRun& run, Clock::time_point deadline) {
  std::size_t sent = 0;
  if (input.empty()) c.input.reset();
  while (c.output.get() >= 0 || c.error.get() >= 0) {
    pollfd fds[3] = {
        {c.input.get(), POLLOUT, 0}, {c.output.get(), POLLIN, 0}, {c.error.get(), POLLIN, 0}};
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    if (::poll(fds, 3, static_cast<int>(left.count())) < 0 && errno != EINTR) return false;
    if (fds[0].revents != 0) {
      const ssize_t n = ::send(c.input.get(), input.data() + sent, input.size() - sent,
                               MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) sent += static_cast<std::size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || sent == input.size()) c.input.reset();
    }
    if (fds[1].revents != 0 && !drain(c.output, run.output, kMaxProcessOutput)) return false;
    if (fds[2].revents != 0) (void)drain(c.error, run.error, kMaxErrorText);
  }
  return true;
}

// Waits for the child's exit (it has closed its outputs: it is ending), killing it at the
// deadline; fills `run` with how it ended.
void reap(pid_t pid, bool late, Clock::time_point deadline, ProcessRun& run) {
  int status = 0;
  for (;;) {
    if (late) ::kill(pid, SIGKILL);
    const pid_t got = ::waitpid(pid, &status, late ? 0 : WNOHANG);
    if (got == pid) break;
    if (got < 0 && errno != EINTR) {
      run.error = std::string("its exit was not seen: ") + std::strerror(errno);
      return;  // (not_started: no result to trust)
    }
    if (got == 0 && Clock::now() >= deadline) late = true;
    if (got == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (late) {
    run.end = ProcessRun::End::late;
  } else if (WIFSIGNALED(status)) {
    run.end = ProcessRun::End::signalled;
    run.status = WTERMSIG(status);
  } else {
    run.end = ProcessRun::End::exited;
    run.status = WEXITSTATUS(status);
  }
}

}  // namespace

ProcessRun run_process(const std::vector<std::string>& command, std::string_view input,
                       Clock::time_point deadline) {
  ProcessRun run;
  Channels channels;
  if (command.empty() || !open_channels(channels, run.error)) return run;
  const pid_t pid = spawn(command, channels, run.error);
  channels.close_child_ends();
  if (pid < 0) return run;
  const bool done = exchange(channels, input, run, deadline);
  channels.close_own_ends();  // a child still writing ends on SIGPIPE, or by SIGKILL below
  reap(pid, !done, deadline, run);
  return run;
}

}  // namespace onnxmap::cli::viewer
