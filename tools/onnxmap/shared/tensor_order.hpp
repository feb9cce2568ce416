#pragma once
// How the verbs and the viewer order tensors: in file order (the model file first, then each
// data file by name; tensors without bytes last).

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

#include "onnxmap/onnxmap.hpp"

namespace onnxmap::cli {

// Whether `t` has elements to show (Tensor::data() gives them: stored bytes, or typed fields to
// decode), and so a payload offset to show and to order by.
[[nodiscard]] inline bool has_elements(const Tensor& t) {
  return t.has_stored_bytes() || t.storage() == TensorStorage::typed;
}

// The key that sorts tensors in file order (compare with <).
[[nodiscard]] inline std::tuple<bool, std::string_view, std::uint64_t> file_order(const Tensor& t) {
  return {!has_elements(t), t.data_file(), has_elements(t) ? t.file_offset() : 0};
}

}  // namespace onnxmap::cli
