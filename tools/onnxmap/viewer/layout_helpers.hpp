#pragma once
// The graph page's layouts, run by Graphviz in helper processes (the viewer's own binary again,
// `onnxmap __layout-helper`: layout_protocol.hpp) so that what Graphviz does costs one drawing at
// most, never the viewer: its memory kept per layout stays in the helper (replaced every few
// hundred layouts), a layout past the time limit is abandoned (the helper killed) for the simpler
// drawing of layered_layout.hpp with a note saying why, and a helper that crashes or hangs is
// replaced on the next drawing. A few helpers run at once; each is reused across drawings.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "graph_layout.hpp"

namespace onnxmap::cli::viewer {

struct LayoutHelperOptions {
  // The helper's program and arguments (execv'd; "/proc/self/exe" is the running binary). Empty:
  // Graphviz runs in this process, one layout at a time, without a time limit (for programs that
  // cannot serve as a helper: the fuzz targets).
  std::vector<std::string> command;
  std::chrono::milliseconds time_limit{5000};  // from the request to the answer
  std::size_t max_helpers = 2;                 // layouts at once; more wait their turn
  std::size_t layouts_per_helper = 500;        // then it is replaced
};

// The command that runs the current binary as a helper: {"/proc/self/exe", "__layout-helper"}.
[[nodiscard]] std::vector<std::string> self_helper_command();

class LayoutHelpers {
 public:
  explicit LayoutHelpers(LayoutHelperOptions options);
  ~LayoutHelpers();  // kills the helpers
  LayoutHelpers(const LayoutHelpers&) = delete;
  LayoutHelpers& operator=(const LayoutHelpers&) = delete;

  // Lays `input` out by Graphviz in a helper; where that fails (past the time limit, the helper
  // died, Graphviz failed, no helper could be started) by layered_layout, with `note` saying
  // why. Throws onnxmap::Error (invalid_argument) only for an index out of range. Thread-safe.
  [[nodiscard]] LayoutResult layout(const LayoutInput& input);

  // The process ids of the helpers alive now (for tests and diagnostics).
  [[nodiscard]] std::vector<pid_t> helper_pids() const;

 private:
  struct Helper {
    pid_t pid = -1;
    int fd = -1;  // the viewer's end of the socket
    std::size_t layouts = 0;
  };

  [[nodiscard]] bool acquire(Helper& helper, std::chrono::steady_clock::time_point deadline,
                             std::string& why);
  void release(Helper helper, bool healthy);
  [[nodiscard]] LayoutResult in_process(const LayoutInput& input);

  LayoutHelperOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable idle_changed_;
  std::vector<Helper> idle_;
  std::vector<pid_t> busy_;
};

}  // namespace onnxmap::cli::viewer
