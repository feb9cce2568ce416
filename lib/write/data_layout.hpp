#pragma once
// Where each tensor's bytes go when a model is saved: inline, or at an aligned offset of an
// external data file, under SaveOptions' rules (threshold, one file or one per tensor, a cap on
// file size). Shared by saving opened models and builders.

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "onnxmap/save.hpp"
#include "write/plan.hpp"
#include "write/safetensors_layout.hpp"

namespace onnxmap::detail {

// A tensor's payload as the writer sees it.
struct PayloadInfo {
  std::string_view name;
  std::uint64_t size = 0;     // bytes in the raw_data layout
  bool in_attribute = false;  // held by an attribute (Constant and others), not an initializer
  bool movable = false;       // raw_data or external data: numeric bytes in the raw layout
  // For the safetensors format: the tensor's index in its model, its type and dims.
  std::uint32_t tensor = 0;
  DataType type = DataType::undefined;
  std::span<const std::int64_t> dims;
};

// An external_data key the source carried that stays valid when the bytes move (a checksum).
struct KeptEntry {
  std::string_view key;
  std::string_view value;
};

class DataLayout {
 public:
  // `model_file_name` is the output's file name (the default location is it + ".data");
  // `external`: whether large tensors go to data files (options.external_data, resolved).
  // Throws onnxmap::Error (invalid_argument, unsafe_path) for unusable options.
  DataLayout(const SaveOptions& options, bool external, const std::string& model_file_name);
  // The in-place layout (serialize_in_place): a tensor of at least options.size_threshold bytes
  // held in raw_data becomes external data naming its own bytes in the model file, whose
  // location is `model_location`; external tensors keep their entries (they do not move).
  DataLayout(const SaveOptions& options, std::string model_location);

  [[nodiscard]] bool in_place() const noexcept { return in_place_; }

  // With the safetensors format: plans the files of `tensors` (every one that goes external, in
  // model order) before any append_data; `source` names the model in the headers. Throws
  // onnxmap::Error (invalid_argument) for a type safetensors cannot hold.
  void plan_safetensors(std::span<const PayloadInfo> tensors, std::string_view source);
  // External data in safetensors files (the format means nothing for an inline save).
  [[nodiscard]] bool safetensors() const noexcept {
    return external_ && options_.data_format == DataFormat::safetensors;
  }
  // A weights file (save to ".safetensors"): every tensor must go to it.
  void set_weights_only() noexcept { weights_only_ = true; }
  [[nodiscard]] bool weights_only() const noexcept { return weights_only_; }
  [[nodiscard]] bool converts_attributes() const noexcept { return options_.convert_attribute; }

  // True when the tensor's payload goes to a data file.
  [[nodiscard]] bool goes_external(const PayloadInfo& tensor) const {
    return external_ && may_go_external(tensor);
  }
  // True when the tensor's payload would go to a data file in an external save (its size, the
  // threshold, attributes): the tensors a save may point into a checkpoint.
  [[nodiscard]] bool may_go_external(const PayloadInfo& tensor) const;

  // Appends the tensor's data fields to message `tensor` of `plan`: raw_data holding `payload`,
  // or the external_data entries and data_location of the place given to it in a data file.
  void append_data(Plan& plan, std::uint32_t tensor, const PayloadInfo& info, const Chunk& payload,
                   std::span<const KeptEntry> kept);

  // Appends external data entries naming bytes that lie in a file already (a checkpoint's
  // safetensors file: SaveOptions::weights_from); nothing is written for them.
  static void append_shared(Plan& plan, std::uint32_t tensor, std::string_view location,
                            std::uint64_t offset, std::uint64_t length,
                            std::span<const KeptEntry> kept);

  // Moves the planned data files into `plan`.
  void finish(Plan& plan);

 private:
  struct Place {
    std::string_view location;
    std::uint64_t offset;
    std::uint64_t length;
  };
  // The external data entries of `place` and `kept`, and data_location; with `checksum_of` (an
  // index of files_), a checksum entry for that file's SHA-1 (Plan::checksum_slots), in place
  // of a kept one.
  static void append_entries(Plan& plan, std::uint32_t tensor, const Place& place,
                             std::span<const KeptEntry> kept,
                             std::optional<std::size_t> checksum_of);

  struct Placement {
    std::size_t file;
    std::uint64_t offset;
  };
  Placement place(std::string_view tensor_name, std::uint64_t size);
  std::string per_tensor_location(std::string_view tensor_name);

  const SaveOptions& options_;
  bool external_;
  bool in_place_ = false;
  bool weights_only_ = false;
  // Of the single data file, or the stem of numbered ones; in place: of the model file.
  std::string location_;
  std::string folder_;  // of per-tensor files ("" or "sub/")
  std::vector<DataFilePlan> files_;
  std::set<std::string> used_names_;  // per-tensor file names given out, lower case
  std::optional<SafetensorsLayout> safetensors_;
};

}  // namespace onnxmap::detail
