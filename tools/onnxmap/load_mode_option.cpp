#include "load_mode_option.hpp"

namespace onnxmap::cli {

LoadMode LoadModeOption::mode() const {
  if (no_mmap) return LoadMode::read;
  return parse_load_mode(name).value_or(LoadMode::map);  // CLI11 checked the name
}

void add_load_mode_option(CLI::App* sub, LoadModeOption& option) {
  auto* mode = sub->add_option("--load-mode", option.name,
                               "map (default: pages read on touch), read (the files copied into "
                               "memory: safe if they may change), direct (copied with O_DIRECT, "
                               "bypassing the page cache)")
                   ->check(CLI::IsMember({"map", "read", "direct"}));
  sub->add_flag("--no-mmap", option.no_mmap, "the same as --load-mode read")->excludes(mode);
}

}  // namespace onnxmap::cli
