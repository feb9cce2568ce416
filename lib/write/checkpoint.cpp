#include "write/checkpoint.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/location.hpp"
#include "index/safetensors_header.hpp"
#include "onnxmap/error.hpp"

namespace onnxmap::detail {

namespace {

namespace fs = std::filesystem;

Error io_error(const fs::path& path, const std::string& what) {
  return {ErrorKind::io, what, Error::kNoOffset, {}, path.string()};
}

// The files an index's weight_map names, in its folder, each once, sorted.
std::vector<fs::path> files_of_index(const fs::path& index) {
  std::ifstream in(index, std::ios::binary);
  if (!in) throw io_error(index, "cannot read the safetensors index");
  std::stringstream text;
  text << in.rdbuf();
  const auto json = nlohmann::json::parse(text.str(), nullptr, false);
  const auto fail = [&](const std::string& why) {
    return Error(ErrorKind::bad_tensor, "not a safetensors index: " + why, Error::kNoOffset, {},
                 index.string());
  };
  if (json.is_discarded() || !json.is_object()) throw fail("not a JSON object");
  const auto map = json.find("weight_map");
  if (map == json.end() || !map->is_object()) throw fail("no \"weight_map\" object");
  std::set<std::string> names;
  for (const auto& [tensor, file] : map->items()) {
    if (!file.is_string()) throw fail("the file of '" + tensor + "' is not a string");
    const std::string location = file.get<std::string>();
    if (const char* why = location_text_problem(location)) {
      throw fail("the file \"" + location + "\" " + why);
    }
    names.insert(location);
  }
  std::vector<fs::path> files;
  for (const std::string& name : names) files.push_back(index.parent_path() / name);
  return files;
}

// The safetensors files `source` stands for.
std::vector<fs::path> files_of(const fs::path& source) {
  std::error_code ec;
  if (!fs::exists(source, ec)) throw io_error(source, "no such file or folder");
  if (!fs::is_directory(source, ec)) {
    if (source.extension() == ".json") return files_of_index(source);
    if (source.extension() != ".safetensors") {
      throw Error(ErrorKind::invalid_argument,
                  "is not a checkpoint: a .safetensors file, a model.safetensors.index.json or a "
                  "folder holding either",
                  Error::kNoOffset, {}, source.string());
    }
    return {source};
  }
  const fs::path index = source / "model.safetensors.index.json";
  if (fs::is_regular_file(index, ec)) return files_of_index(index);
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(source, ec)) {
    if (entry.path().extension() == ".safetensors") files.push_back(entry.path());
  }
  if (ec) throw io_error(source, "cannot list the folder: " + ec.message());
  if (files.empty()) throw io_error(source, "holds no .safetensors file");
  std::sort(files.begin(), files.end());
  return files;
}

// `file` relative to `folder` as the reader will find it: by the names given (a Hub snapshot's
// file is a symlink whose name is the location), else by where symlinks lead; refused when it
// lies outside, or when a symlink leads where the reader would refuse to follow it.
std::string location_in(const fs::path& file, const fs::path& folder) {
  std::error_code ec;
  fs::path relative = fs::absolute(file, ec).lexically_normal().lexically_relative(
      fs::absolute(folder, ec).lexically_normal());
  if (relative.empty() || location_text_problem(relative.generic_string()) != nullptr) {
    relative = fs::weakly_canonical(file, ec).lexically_relative(fs::weakly_canonical(folder, ec));
  }
  const std::string location = relative.generic_string();
  if (ec || relative.empty() || location_text_problem(location) != nullptr ||
      !belongs_to_folder(fs::weakly_canonical(folder, ec), fs::weakly_canonical(file, ec))) {
    throw Error(ErrorKind::unsafe_path,
                "lies outside the folder of the model being written (" + folder.string() +
                    "); external data cannot point out of it: write the model beside the "
                    "checkpoint or below it",
                Error::kNoOffset, {}, file.string());
  }
  return location;
}

}  // namespace

const CheckpointTensor* Checkpoint::find(std::string_view name) const {
  const auto it =
      std::lower_bound(tensors.begin(), tensors.end(), name,
                       [](const CheckpointTensor& t, std::string_view n) { return t.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

Checkpoint open_checkpoint(const fs::path& source, const fs::path& model_folder) {
  Checkpoint checkpoint;
  for (const fs::path& path : files_of(source)) {
    const std::string location = location_in(path, model_folder);
    CheckpointFile file{location, MappedFile::open(path)};
    const SafetensorsHeader header = read_safetensors_header(file.file.bytes(), path.string());
    for (const SafetensorsEntry& e : header.tensors) {
      checkpoint.tensors.push_back({e.name, *onnx_type_of_safetensors(e.dtype), e.shape,
                                    checkpoint.files.size(), e.begin, e.end - e.begin});
    }
    checkpoint.files.push_back(std::move(file));
  }
  auto& tensors = checkpoint.tensors;
  std::sort(tensors.begin(), tensors.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  const auto twice =
      std::adjacent_find(tensors.begin(), tensors.end(),
                         [](const auto& a, const auto& b) { return a.name == b.name; });
  if (twice != tensors.end()) {
    throw Error(ErrorKind::invalid_argument,
                "tensor '" + twice->name + "' is in two files of the checkpoint, " +
                    checkpoint.files[twice->file].location + " and " +
                    checkpoint.files[std::next(twice)->file].location,
                Error::kNoOffset, {}, source.string());
  }
  return checkpoint;
}

}  // namespace onnxmap::detail
