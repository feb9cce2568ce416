#include "data_files.hpp"

#include <algorithm>
#include <map>

#include "stats_jobs.hpp"
#include "tooling.hpp"

namespace onnxmap::cli::viewer {

struct DataFiles::State {
  struct Tensors {
    std::uint64_t count = 0, bytes = 0;
    std::map<std::uint64_t, std::size_t> at_offset;  // the model's tensor at each file offset
  };
  std::vector<tooling::DataFileInfo> files;
  std::vector<Tensors> tensors;  // by file

  explicit State(const Model& model) : files(tooling::data_files(model)), tensors(files.size()) {
    std::map<std::string, std::size_t, std::less<>> by_location;
    for (std::size_t f = 0; f < files.size(); ++f) by_location.emplace(files[f].location, f);
    for (std::size_t i = 0; i < model.tensor_count(); ++i) {
      const Tensor t = model.tensor_at(i);
      if (t.storage() != TensorStorage::external) continue;
      const auto found = by_location.find(t.data_file());
      if (found == by_location.end()) continue;
      Tensors& in = tensors[found->second];
      ++in.count;
      in.bytes += t.byte_size();
      in.at_offset.emplace(t.file_offset(), i);
    }
  }
};

DataFiles::DataFiles(const Model& model)
    : state_(std::make_unique<const State>(model)), model_(model) {}

DataFiles::~DataFiles() = default;

nlohmann::json DataFiles::summary() const {
  const auto& files = state_->files;
  const auto& tensors = state_->tensors;
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t f = 0; f < files.size(); ++f) {
    const tooling::DataFileInfo& file = files[f];
    nlohmann::json entry = {{"location", file.location},
                            {"size", file.size},
                            {"format", file.safetensors ? "safetensors" : "raw"},
                            {"tensors", tensors[f].count},
                            {"bytes", tensors[f].bytes}};
    if (file.safetensors && !file.error.empty()) entry["error"] = file.error;
    if (file.safetensors && file.error.empty()) {
      const auto used = std::count_if(file.entries.begin(), file.entries.end(), [&](auto& e) {
        return tensors[f].at_offset.contains(e.begin);
      });
      entry["header_bytes"] = file.header_bytes;
      entry["metadata"] = file.metadata;
      entry["entries"] = file.entries.size();
      entry["entries_unused"] = file.entries.size() - static_cast<std::size_t>(used);
    }
    out.push_back(std::move(entry));
  }
  return out;
}

nlohmann::json DataFiles::header(const std::string& location, std::uint64_t offset,
                                 std::uint64_t limit) const {
  const auto& files = state_->files;
  const auto& tensors = state_->tensors;
  const auto it = std::find_if(files.begin(), files.end(), [&](const auto& file) {
    return file.safetensors && file.location == location;
  });
  if (it == files.end()) throw ApiError{404, "no safetensors data file " + location};
  const std::size_t f = static_cast<std::size_t>(it - files.begin());
  if (!it->error.empty()) throw ApiError{500, location + ": " + it->error};
  nlohmann::json entries = nlohmann::json::array();
  const std::uint64_t end = std::min<std::uint64_t>(it->entries.size(), offset + limit);
  for (std::uint64_t i = std::min<std::uint64_t>(offset, end); i < end; ++i) {
    const tooling::SafetensorsEntry& e = it->entries[i];
    nlohmann::json row = {{"name", e.name},
                          {"dtype", e.dtype},
                          {"shape", e.shape},
                          {"data_offsets", {e.begin - it->header_bytes, e.end - it->header_bytes}},
                          {"tensor", nullptr}};
    if (const auto t = tensors[f].at_offset.find(e.begin); t != tensors[f].at_offset.end()) {
      const Tensor tensor = model_.tensor_at(t->second);
      row["tensor"] = {{"name", std::string(tensor.lookup_name())}, {"index", t->second}};
    }
    entries.push_back(std::move(row));
  }
  return {{"location", location},
          {"size", it->size},
          {"header_bytes", it->header_bytes},
          {"metadata", it->metadata},
          {"total", it->entries.size()},
          {"offset", offset},
          {"entries", std::move(entries)}};
}

}  // namespace onnxmap::cli::viewer
