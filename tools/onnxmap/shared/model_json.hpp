#pragma once
// The JSON forms of a model's summary, its counts and a tensor's row, shared by `info --json`,
// `ls --json` and the viewer's API, so that each says the same thing the same way.

#include <nlohmann/json.hpp>

#include "onnxmap/onnxmap.hpp"
#include "onnxmap/stats.hpp"
#include "tensor_order.hpp"

namespace onnxmap::cli {

// ir_version, opset_import, producer, metadata, inputs and outputs, file_size.
[[nodiscard]] nlohmann::json summary_json(const ModelSummary& s);
// Counts over the full index: the main graph's nodes by op type, every tensor and its bytes by
// dtype, external files.
[[nodiscard]] nlohmann::json stats_json(const Model& model);
// One row of `ls --json`: name, dtype, dims, bytes, storage, file, offset (when it has one), path.
[[nodiscard]] nlohmann::json tensor_json(const Tensor& t);

// One row of `stats --json`: name, dtype, count, and with `s` min, max, mean, std, zeros, nans,
// infinities and the histogram's counts; min, max, mean and std null where not finite.
[[nodiscard]] nlohmann::json tensor_stats_json(const Tensor& t, const TensorStats* s);

}  // namespace onnxmap::cli
