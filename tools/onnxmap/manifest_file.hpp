#pragma once
// A manifest file (verify.hpp) read for verify and load --verify.

#include <string>

#include "onnxmap/verify.hpp"

namespace onnxmap::cli {

// Throws onnxmap::Error: io for a file that cannot be read, invalid_argument for one that is no
// manifest (parse_manifest), naming the file.
[[nodiscard]] Manifest read_manifest(const std::string& path);

}  // namespace onnxmap::cli
