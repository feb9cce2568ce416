#pragma once
// The safetensors data format of a save (SaveOptions::data_format): which file each external
// tensor goes to and at what offset, and each file's header.
//
// A safetensors file is an 8-byte little-endian header length, a JSON object naming each
// tensor's dtype, shape and data_offsets (relative to the end of the header), and the payloads,
// which must cover the rest of the file without a hole. So that each payload is aligned to its
// element size all the same, the header is padded with spaces to a multiple of the save's align
// and the payloads are laid out widest element first (8-byte, 4, 2, 1, then packed sub-byte
// types); a payload's size is a multiple of its element size, so none breaks the next one's
// alignment. Tensors go to the shards in model order (a new shard when the next payload would
// pass SaveOptions::max_external_file_size), as the Hub's sharded checkpoints do.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "onnxmap/schema.hpp"

namespace onnxmap::detail {

struct PayloadInfo;  // write/data_layout.hpp

struct SafetensorsFile {
  std::string location;
  std::vector<std::byte> header;  // the length and the padded JSON: the file's first bytes
  std::uint64_t size = 0;
};

class SafetensorsLayout {
 public:
  // Plans `tensors` (those going external, in model order; each with its id, type and dims)
  // into `location` ("model.safetensors") or, past `shard_size` bytes (0: no limit), shards
  // named as the Hub names them (model-00001-of-00003.safetensors) with an index
  // (model.safetensors.index.json). `source` names the model in each header's __metadata__.
  // Throws onnxmap::Error (invalid_argument) for a location not ending in ".safetensors" and for
  // a tensor whose type safetensors cannot hold, naming it and its type.
  SafetensorsLayout(std::span<const PayloadInfo> tensors, const std::string& location,
                    std::uint64_t shard_size, std::uint64_t align, std::string_view source);

  struct Placement {
    std::size_t file;
    std::uint64_t offset;  // in the file, the header included
  };
  [[nodiscard]] Placement placement(std::uint32_t tensor) const { return where_.at(tensor); }
  [[nodiscard]] const std::vector<SafetensorsFile>& files() const noexcept { return files_; }
  // The index's location and JSON; empty when there is one file.
  [[nodiscard]] const std::string& index_location() const noexcept { return index_location_; }
  [[nodiscard]] const std::string& index_json() const noexcept { return index_json_; }

 private:
  std::vector<SafetensorsFile> files_;
  std::unordered_map<std::uint32_t, Placement> where_;
  std::string index_location_;
  std::string index_json_;
};

}  // namespace onnxmap::detail
