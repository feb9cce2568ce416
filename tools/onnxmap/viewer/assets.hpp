#pragma once
// The viewer page's files, built into the binary from www/ by embed_assets.py, so the page
// works offline and nothing is read from disk to serve it.

#include <span>
#include <string_view>

namespace onnxmap::cli::viewer {

struct Asset {
  std::string_view path;  // "/index.html", "/app.js", ...
  std::string_view content_type;
  std::string_view body;
};

[[nodiscard]] std::span<const Asset> view_assets();

}  // namespace onnxmap::cli::viewer
