#pragma once
// Small files the command reads whole: a manifest (verify, load --verify), a name mapping
// (convert --weights-names).

#include <string>

namespace onnxmap::cli {

// The bytes of `path`. Throws onnxmap::Error (io) naming the file and `what` it was to be
// ("the manifest") when it cannot be read.
[[nodiscard]] std::string read_text(const std::string& path, const std::string& what);

}  // namespace onnxmap::cli
