#pragma once
// A tensor as a person names it on the command line: its field path as `ls` shows it
// ("graph.initializer[3]"), or its lookup name.

#include <string>

#include "onnxmap/onnxmap.hpp"

namespace onnxmap::cli {

// Throws onnxmap::Error (not_found) when neither names a tensor.
[[nodiscard]] inline Tensor tensor_named(const Model& model, const std::string& name_or_path) {
  if (auto by_path = model.tensor_at_path(name_or_path)) return *by_path;
  return model.tensor(name_or_path);
}

}  // namespace onnxmap::cli
