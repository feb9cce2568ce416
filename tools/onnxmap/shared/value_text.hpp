#pragma once
// Compact text of values, one line each: dims, types, attribute values and tensors, as the verbs
// (`ls`, `info`, `graph`, `diff`) and the viewer show them. A shape has one spelling everywhere,
// "[256, 64]". Tensors are shown by data type and shape, never by value.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "onnxmap/onnxmap.hpp"

namespace onnxmap::cli {

// "[256, 64]"; "[]" for a scalar: tensor dims spelled as Type::to_string() spells a shape.
[[nodiscard]] std::string dims_text(std::span<const std::int64_t> dims);
// "FLOAT[4, 3]"; "INT64[]" for a scalar.
[[nodiscard]] std::string tensor_text(const Tensor& tensor);
// "sparse FLOAT[100, 100] nnz=12"
[[nodiscard]] std::string sparse_tensor_text(const SparseTensor& tensor);
// A graph held in an attribute, by name and size: "<graph then_branch: 3 nodes>".
[[nodiscard]] std::string graph_ref_text(const Graph& graph);
// The value of `attribute` after its "name=": 0.5, 3, "text", [1, 2, 3], FLOAT[4, 3], @ref ...
[[nodiscard]] std::string attribute_value_text(const Attribute& attribute);
// "text" with quotes; bytes that are not printable ASCII as \xNN; long strings cut short.
[[nodiscard]] std::string quoted(std::string_view bytes);

}  // namespace onnxmap::cli
