#pragma once
// --load-mode map|read|direct on every verb that opens a model, and --no-mmap, the older spelling
// of --load-mode read, kept for scripts.

#include <CLI/CLI.hpp>
#include <string>

#include "onnxmap/options.hpp"

namespace onnxmap::cli {

struct LoadModeOption {
  std::string name = "map";
  bool no_mmap = false;
  [[nodiscard]] LoadMode mode() const;
};

void add_load_mode_option(CLI::App* sub, LoadModeOption& option);

}  // namespace onnxmap::cli
