#pragma once
// How a model is opened, with safe limits by default.

#include <cstdint>

#include "onnxmap/mapped_file.hpp"

namespace onnxmap {

struct Options {
  LoadMode load = LoadMode::map;
  // Messages nested deeper than this (subgraphs in attributes in nodes ...) are an error, never a
  // stack overflow.
  int max_depth = 64;
  // At most this many tensors; a limit, not a reservation.
  std::uint64_t max_tensors = std::uint64_t{1} << 28U;
  // External data locations that are absolute, climb out with "..", or reach outside the model's
  // folder through a symlink or hardlink are refused unless this is set.
  bool allow_external_outside_folder = false;
  // A tensor whose payload cannot be located or does not fit its dims and data type (raw_data of
  // the wrong size, a missing, unsafe or too short external file, a negative dimension) fails
  // the open unless this is set. When set, such a tensor opens with TensorStorage::invalid, its
  // bytes() throw that error, and Model::payload_errors() lists every one: what `check` needs to
  // report all problems of a file, not just the first.
  bool collect_payload_errors = false;
};

}  // namespace onnxmap
