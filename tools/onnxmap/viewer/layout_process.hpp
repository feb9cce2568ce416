#pragma once
// A program run to completion with a deadline, for the graph page's layouts (graph_layout.hpp):
// Graphviz's `dot` runs as a child process per drawing, so that what it does (its memory, a
// crash, a layout that takes minutes) costs that drawing, never the viewer.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace onnxmap::cli::viewer {

struct ProcessRun {
  enum class End {
    exited,       // `status` is its exit status
    signalled,    // ended by signal `status`
    late,         // still running at the deadline (or writing more than kMaxProcessOutput): killed
    not_started,  // `error` says why
  };
  End end = End::not_started;
  int status = 0;
  std::string output;  // its standard output
  std::string error;   // the start of its standard error, or why it did not start
};

// The most bytes of standard output kept; a program that writes more is killed.
inline constexpr std::size_t kMaxProcessOutput = std::size_t{64} << 20U;

// Runs `command` (its program found on PATH) with `input` on its standard input, nothing else
// of this process open in it, default signal dispositions and an empty signal mask, in this
// process's process group (so that Ctrl-C in a terminal ends it too). Returns when it has ended,
// or kills it (SIGKILL) at `deadline` and returns then. Thread-safe; several may run at once.
[[nodiscard]] ProcessRun run_process(const std::vector<std::string>& command,
                                     std::string_view input,
                                     std::chrono::steady_clock::time_point deadline);

}  // namespace onnxmap::cli::viewer
