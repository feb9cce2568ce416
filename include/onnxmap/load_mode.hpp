#pragma once
// How a file's bytes are fetched, one vocabulary for opening a model (Options::load), for the
// bulk loader (LoadOptions::mode, bulk.hpp) and for the command line (--load-mode, --mode).

#include <optional>
#include <string_view>

#include "onnxmap/export.hpp"

namespace onnxmap {

enum class LoadMode {
  // mmap: nothing is read until touched, bytes are views into the page cache (zero-copy).
  map,
  // Large pread(2) requests into memory the library or the caller owns; the file's pages stay
  // in the page cache afterwards. Opening a model this way copies the whole file, so it is
  // immune to the file changing later (also how pipes and standard input are read).
  read,
  // O_DIRECT reads into aligned buffers, bypassing the page cache: the file's pages are not left
  // in memory. Where the file system refuses O_DIRECT, reads fall back to `read`.
  direct,
};

// "map", "read", "direct".
[[nodiscard]] ONNXMAP_API std::string_view to_string(LoadMode mode) noexcept;
// The mode named `name`, or nullopt.
[[nodiscard]] ONNXMAP_API std::optional<LoadMode> parse_load_mode(std::string_view name) noexcept;

}  // namespace onnxmap
