#pragma once
// URLs of a remote model and of its external data files.

#include <string>
#include <string_view>

namespace onnxmap::remote {

// The URL of external data `location` beside the model at `model_url`: the same scheme, host and
// folder, the location's segments percent-encoded. The same policy as on disk, always strict:
// empty, absolute or `..` locations, and control characters, are an onnxmap::Error
// (unsafe_path), so the result never leaves the model's folder.
[[nodiscard]] std::string resolve_location(std::string_view model_url, std::string_view location);

// `segment` percent-encoded as one path segment (every byte but A-Z a-z 0-9 - . _ ~).
[[nodiscard]] std::string escape_segment(std::string_view segment);

// `path`'s '/'-separated segments each percent-encoded, the slashes kept.
[[nodiscard]] std::string escape_path(std::string_view path);

// The model file's name: the URL path's last segment, decoded ("model.onnx" when it has none).
[[nodiscard]] std::string file_name(std::string_view model_url);

}  // namespace onnxmap::remote
