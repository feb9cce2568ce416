#pragma once
// FileVersion (onnxmap/file_version.hpp) of a path and of an open file, from one conversion.

#include <optional>

#include "onnxmap/file_version.hpp"

namespace onnxmap::io {

// The version of the open file `fd` (fstat); nullopt when the system refuses.
[[nodiscard]] std::optional<FileVersion> open_file_version(int fd);

}  // namespace onnxmap::io
