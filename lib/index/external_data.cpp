// External data files: one path policy for every reference (no absolute paths, no ".." escape,
// no symlink or hardlink leading outside the model's folder), each file mapped once.

#include <sys/stat.h>

#include <cctype>
#include <string>
#include <vector>

#include "common/location.hpp"
#include "index/tensor_table.hpp"
#include "io/lfs_pointer.hpp"

namespace onnxmap::detail {

namespace {

// A file name as exporters' conventions vary it: lower case, without '.', '_' and '-'
// ("model.onnx.data", "model.onnx_data" and "Model.ONNX-data" alike).
std::string convention_free(std::string_view name) {
  std::string out;
  for (const char c : name) {
    if (c != '.' && c != '_' && c != '-') {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

// For a data file that does not exist: " (the folder holds 'model.onnx_data': ...)" where a file
// beside it differs from the name only by such a convention, else "".
std::string named_otherwise(const std::filesystem::path& model_folder, std::string_view location) {
  const std::filesystem::path wanted{std::string(location)};
  const std::filesystem::path folder = model_folder / wanted.parent_path();
  const std::string key = convention_free(wanted.filename().string());
  std::error_code ec;
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(
           folder.empty() ? std::filesystem::path(".") : folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (convention_free(name) == key && found.size() < 3) found.push_back(name);
  }
  if (found.empty()) return "";
  std::string names;
  for (const std::string& name : found) names += (names.empty() ? "'" : ", '") + name + "'";
  return " (the folder holds " + names + ": another exporter's name for it? rename it to '" +
         wanted.filename().string() + "' if it is this model's data)";
}

}  // namespace

std::uint32_t open_data_file(ModelIndex& index, std::string_view location) {
  for (std::uint32_t i = 0; i < index.data_files.size(); ++i) {
    if (index.data_files[i].location == location) return i;
  }
  const bool strict = !index.options.allow_external_outside_folder;
  // What could name a file outside the folder is refused before touching the filesystem.
  if (const char* why = strict ? location_text_problem(location) : nullptr) {
    throw unsafe_location(location, why);
  }
  const std::filesystem::path full = index.folder / std::filesystem::path(std::string(location));

  std::error_code ec;
  const auto status = std::filesystem::status(full, ec);
  if (ec || !std::filesystem::exists(status)) {
    throw Error(ErrorKind::io,
                "external data file '" + full.string() + "' does not exist" +
                    named_otherwise(index.folder, location),
                Error::kNoOffset, "external_data");
  }
  if (!std::filesystem::is_regular_file(status)) {
    throw unsafe_location(location, "is not a regular file");
  }
  if (strict) {
    // Symlinks anywhere on the way must still land inside the folder (or a Hub snapshot's
    // repository).
    const auto folder = std::filesystem::canonical(index.folder.empty() ? std::filesystem::path(".")
                                                                        : index.folder);
    const auto target = std::filesystem::canonical(full);
    if (!belongs_to_folder(folder, target)) {
      throw unsafe_location(location, "leads outside the model's folder (through a symlink)");
    }
    // A second hard link may live anywhere: its content is not known to belong to this model.
    struct stat info {};
    if (::stat(target.c_str(), &info) == 0 && info.st_nlink > 1) {
      throw unsafe_location(location,
                            "has several hard links and may be a file from outside the folder");
    }
  }
  MappedFile file = MappedFile::open(full, index.options.mode);
  if (const auto pointer = lfs_pointer(file.bytes())) {
    throw Error(
        ErrorKind::io,
        "external data file '" + std::string(location) + "' " + lfs_pointer_message(*pointer),
        Error::kNoOffset, "external_data");
  }
  index.data_files.push_back({std::string(location), std::move(file)});
  return static_cast<std::uint32_t>(index.data_files.size() - 1);
}

}  // namespace onnxmap::detail
