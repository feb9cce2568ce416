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

namespace onnxmap::detail {

// A tensor's payload as the writer sees it.
struct PayloadInfo {
  std::string_view name;
  std::uint64_t size = 0;     // bytes in the raw_data layout
  bool in_attribute = false;  // held by an attribute (Constant and others), not an initializer
  bool movable = false;       // raw_data or external data: numeric bytes in the raw layout
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

  // True when the tensor's payload goes to a data file.
  [[nodiscard]] bool goes_external(const PayloadInfo& tensor) const;

  // Appends the tensor's data fields to message `tensor` of `plan`: raw_data holding `payload`,
  // or the external_data entries and data_location of the place given to it in a data file.
  void append_data(Plan& plan, std::uint32_t tensor, const PayloadInfo& info, const Chunk& payload,
                   std::span<const KeptEntry> kept);

  // Moves the planned data files into `plan`.
  void finish(Plan& plan);

 private:
  struct Placement {
    std::size_t file;
    std::uint64_t offset;
  };
  Placement place(std::string_view tensor_name, std::uint64_t size);
  std::string per_tensor_location(std::string_view tensor_name);

  const SaveOptions& options_;
  bool external_;
  bool in_place_ = false;
  // Of the single data file, or the stem of numbered ones; in place: of the model file.
  std::string location_;
  std::string folder_;    // of per-tensor files ("" or "sub/")
  std::vector<DataFilePlan> files_;
  std::set<std::string> used_names_;  // per-tensor file names given out, lower case
};

}  // namespace onnxmap::detail
