#pragma once

#include <string_view>

#include "onnxmap/version_config.hpp"

namespace onnxmap {

// The library's version, "MAJOR.MINOR.PATCH".
[[nodiscard]] constexpr std::string_view version() noexcept {
  return ONNXMAP_VERSION;
}

}  // namespace onnxmap
