#pragma once
// The JSON forms of a model's summary, its counts and a tensor's row, shared by `info --json`,
// `ls --json` and the viewer's API, so that each says the same thing the same way.

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <unordered_map>

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

// What a tensor's first reader says of it, for `ls --json` and the viewer's tensor page:
// "module" (module_path of the reader, where it names one) and, where the reader's attributes
// give the weight's logical form (MatMulNBits' B: N x K of `bits`-bit unsigned integers packed
// in blocks of block_size), "logical": {"dtype", "dims", "block_size", "op"}. An empty object
// where it says neither.
[[nodiscard]] nlohmann::json reader_json(const Node& reader, std::uint32_t input);

// The first reader of each initializer of the main graph (initializer_readers), for the rows of
// `ls` and of the viewer's tensor table. Holds views into the model, which must outlive it.
class FirstReaders {
 public:
  explicit FirstReaders(const Model& model);
  // Who reads `t`, where it is an initializer of the main graph that a node reads.
  [[nodiscard]] const InitializerReader* of(const Tensor& t) const;
  // The first reader's index in the main graph's nodes, UINT32_MAX where none: the key of
  // `--sort module` (a layer's weights together, layers in order, unread tensors last).
  [[nodiscard]] std::uint32_t position(const Tensor& t) const;
  // reader_json of `t`'s first reader; an empty object where it has none.
  [[nodiscard]] nlohmann::json json(const Tensor& t) const;

 private:
  std::optional<Graph> graph_;
  std::unordered_map<std::string_view, InitializerReader> readers_;
};

// One row of `stats --json`: name, dtype, count, and with `s` min, max, mean, std, zeros, nans,
// infinities and the histogram's counts; min, max, mean and std null where not finite.
[[nodiscard]] nlohmann::json tensor_stats_json(const Tensor& t, const TensorStats* s);

}  // namespace onnxmap::cli
