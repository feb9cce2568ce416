#pragma once
// The safetensors files a save points an ONNX graph into (SaveOptions::weights_from): each file
// mapped, its header parsed (index/safetensors_header.hpp), and its location as the saved model
// will name it.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "io/mapped_file.hpp"
#include "onnxmap/schema.hpp"

namespace onnxmap::detail {

struct CheckpointTensor {
  std::string name;
  DataType type = DataType::undefined;
  std::vector<std::int64_t> shape;
  std::size_t file = 0;     // into Checkpoint::files
  std::uint64_t begin = 0;  // in the file, the header included
  std::uint64_t length = 0;
};

struct CheckpointFile {
  std::string location;  // relative to the saved model's folder, '/'-separated
  MappedFile file;
};

struct Checkpoint {
  std::vector<CheckpointFile> files;
  std::vector<CheckpointTensor> tensors;  // sorted by name

  // The tensor named `name`, or nullptr.
  [[nodiscard]] const CheckpointTensor* find(std::string_view name) const;
  [[nodiscard]] std::span<const std::byte> bytes(const CheckpointTensor& tensor) const {
    return files[tensor.file].file.bytes().subspan(tensor.begin, tensor.length);
  }
};

// Opens the checkpoint at `source` (a .safetensors file, a model.safetensors.index.json, or a
// folder holding either: its index, else every .safetensors file in it) for a model saved into
// `model_folder`. Throws onnxmap::Error: io for a source that does not exist, a file that cannot
// be read or a folder without safetensors files; invalid_argument for a file of another kind
// and for a tensor name found in two files; bad_tensor for a header that breaks the format's
// rules or an index that is not one; unsafe_path for a file outside `model_folder` (an external
// data location cannot leave the model's folder).
[[nodiscard]] Checkpoint open_checkpoint(const std::filesystem::path& source,
                                         const std::filesystem::path& model_folder);

}  // namespace onnxmap::detail
