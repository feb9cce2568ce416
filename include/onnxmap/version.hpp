#pragma once
// The library's version. Threads: a constant, safe anywhere.

#include <string_view>

#include "onnxmap/version_config.hpp"

namespace onnxmap {

// The library's version, "MAJOR.MINOR.PATCH".
[[nodiscard]] constexpr std::string_view version() noexcept {
  return ONNXMAP_VERSION;
}

}  // namespace onnxmap
