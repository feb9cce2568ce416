#pragma once
// Models read over HTTP. Model::open, peek and check take an http:// or https:// URL wherever
// they take a path (Options::remote says how); this header adds what only remote models need.

#include <cstddef>
#include <span>

#include "onnxmap/export.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/remote_options.hpp"

namespace onnxmap {

// The bytes of the model file. For a file: the mapped file. For a URL: its local mirror, which
// holds the metadata (payloads read as zeros until fetched), or, with `with_payloads`, every
// byte, fetched first. Valid while `model` is open. Throws onnxmap::Error (http) when a fetch
// fails.
[[nodiscard]] ONNXMAP_API std::span<const std::byte> model_file_bytes(const Model& model,
                                                                      bool with_payloads);

}  // namespace onnxmap
