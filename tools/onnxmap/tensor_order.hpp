#pragma once
// How the verbs and the viewer pick and order tensors: by a glob on the lookup name, and in file
// order (the model file first, then each data file by name; tensors without bytes last).

#include <fnmatch.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

#include "onnxmap/onnxmap.hpp"

namespace onnxmap::cli {

// Whether `t` has a payload offset to show and to order by.
[[nodiscard]] inline bool has_offset(const Tensor& t) {
  return t.storage() != TensorStorage::none && t.storage() != TensorStorage::invalid;
}

// The key that sorts tensors in file order (compare with <).
[[nodiscard]] inline std::tuple<bool, std::string_view, std::uint64_t> file_order(const Tensor& t) {
  return {!has_offset(t), t.data_file(), has_offset(t) ? t.file_offset() : 0};
}

// Whether `name` matches the fnmatch glob `pattern`; an empty pattern matches every name.
[[nodiscard]] inline bool glob_matches(const std::string& pattern, std::string_view name) {
  return pattern.empty() || ::fnmatch(pattern.c_str(), std::string(name).c_str(), 0) == 0;
}

}  // namespace onnxmap::cli
