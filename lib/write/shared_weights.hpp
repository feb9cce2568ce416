#pragma once
// A save that points an ONNX graph into a checkpoint's safetensors files (SaveOptions::
// weights_from): which initializers are found there (by name, by content, or transposed), and
// what the writer does with each: point it into the checkpoint, keep it in the model's own data,
// or, with share_transposed, replace the folded copy by the checkpoint's tensor through a
// Transpose node.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "index/model_index.hpp"
#include "onnxmap/model.hpp"
#include "onnxmap/save.hpp"
#include "write/checkpoint.hpp"

namespace onnxmap::detail {

enum class MatchKind : std::uint8_t { none, name, content, transposed };

struct WeightMatch {
  MatchKind kind = MatchKind::none;
  std::uint32_t checkpoint = kNone;  // into Checkpoint::tensors
};

// How each of `candidates` (tensor ids of `model`) is found in `checkpoint`, in their order.
// Throws onnxmap::Error (invalid_argument) for a name match of another type, shape or values, and
// for a name mapping that names what neither side has.
[[nodiscard]] std::vector<WeightMatch> match_weights(const Model& model,
                                                     std::span<const std::uint32_t> candidates,
                                                     const Checkpoint& checkpoint,
                                                     const WeightsFrom& options);

class SharedWeightsPlan {
 public:
  enum class Use : std::uint8_t {
    own,         // written by the save as usual
    shared,      // external data inside the checkpoint, its message otherwise copied
    checkpoint,  // replaced by an initializer of the checkpoint's tensor (fed to a Transpose)
    dropped,     // left out: another initializer holds the checkpoint's tensor (and a Transpose)
  };
  struct Entry {
    Use use = Use::own;
    MatchKind kind = MatchKind::none;
    std::uint32_t checkpoint = kNone;
    std::string initializer;  // Use::checkpoint: the new initializer's name
  };

  // Opens the checkpoint (open_checkpoint) for a model saved into `model_folder`, and matches
  // `candidates`: the tensors of `model` the save would write to a data file.
  SharedWeightsPlan(const Model& model, const WeightsFrom& options,
                    const std::filesystem::path& model_folder,
                    std::span<const std::uint32_t> candidates);

  [[nodiscard]] const Entry& entry(std::uint32_t tensor) const { return entries_[tensor]; }
  [[nodiscard]] const Checkpoint& checkpoint() const noexcept { return checkpoint_; }
  // The Transpose nodes, encoded as fields of a GraphProto, to put first in the main graph.
  [[nodiscard]] std::span<const std::byte> transpose_nodes() const noexcept { return nodes_; }
  // The main graph's record, where transpose_nodes go (kNone: the model has none).
  [[nodiscard]] std::uint32_t graph_record() const noexcept { return graph_record_; }
  // The external data entries of `entry`'s tensor inside the checkpoint.
  [[nodiscard]] const CheckpointTensor& tensor_of(const Entry& entry) const {
    return checkpoint_.tensors[entry.checkpoint];
  }
  [[nodiscard]] const std::string& location_of(const Entry& entry) const {
    return checkpoint_.files[tensor_of(entry).file].location;
  }
  // Adds each tensor's count and bytes to `shared` by its use (`own` left to the writer).
  void count(SharedWeights& shared) const;

 private:
  void plan_transposes(const Model& model, const WeightsFrom& options);

  Checkpoint checkpoint_;
  std::vector<Entry> entries_;  // by tensor id
  std::vector<std::byte> nodes_;
  std::uint32_t graph_record_ = kNone;
};

}  // namespace onnxmap::detail
