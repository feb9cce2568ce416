#pragma once
// /api/summary's "data_files" and /api/safetensors (api.md): a model's external data files, the
// tensors the model keeps in each, and a safetensors file's header, each entry beside the
// model's tensor that points at it.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "onnxmap/onnxmap.hpp"

namespace onnxmap::cli::viewer {

class DataFiles {
 public:
  // Reads each safetensors file's header (fetched first for a model opened by URL).
  explicit DataFiles(const Model& model);
  ~DataFiles();
  DataFiles(const DataFiles&) = delete;
  DataFiles& operator=(const DataFiles&) = delete;

  // [{"location", "size", "format", "tensors", "bytes", and for safetensors "header_bytes",
  //   "metadata", "entries", "entries_unused" or "error"}], in the model's order of the files.
  [[nodiscard]] nlohmann::json summary() const;
  // The header of the safetensors file `location`, entries [offset, offset + limit) by offset.
  // Throws ApiError (404) for a location that is no safetensors data file of the model.
  [[nodiscard]] nlohmann::json header(const std::string& location, std::uint64_t offset,
                                      std::uint64_t limit) const;

 private:
  struct State;  // data_files.cpp: the files' headers and the model's tensors in each
  std::unique_ptr<const State> state_;
  const Model& model_;
};

}  // namespace onnxmap::cli::viewer
