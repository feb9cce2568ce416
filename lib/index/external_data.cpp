// External data files: one path policy for every reference (no absolute paths, no ".." escape,
// no symlink or hardlink leading outside the model's folder), each file mapped once.

#include <sys/stat.h>

#include <string>

#include "index/tensor_table.hpp"

namespace onnxmap::detail {

namespace {

Error unsafe(std::string_view location, const std::string& why) {
  return {ErrorKind::unsafe_path, "external data location '" + std::string(location) + "' " + why,
          Error::kNoOffset, "external_data"};
}

// Refuses what could name a file outside the folder before touching the filesystem.
void check_location_text(std::string_view location) {
  if (location.empty()) throw unsafe(location, "is empty");
  if (location.find('\0') != std::string_view::npos) throw unsafe(location, "contains NUL");
  const std::filesystem::path path{std::string(location)};
  if (path.is_absolute() || path.has_root_name() || location.front() == '/') {
    throw unsafe(location, "is absolute");
  }
  for (const auto& part : path) {
    if (part == "..") throw unsafe(location, "climbs out of the model's folder with '..'");
  }
}

}  // namespace

std::uint32_t open_data_file(ModelIndex& index, std::string_view location) {
  for (std::uint32_t i = 0; i < index.data_files.size(); ++i) {
    if (index.data_files[i].location == location) return i;
  }
  const bool strict = !index.options.allow_external_outside_folder;
  if (strict) check_location_text(location);
  const std::filesystem::path full = index.folder / std::filesystem::path(std::string(location));

  std::error_code ec;
  const auto status = std::filesystem::status(full, ec);
  if (ec || !std::filesystem::exists(status)) {
    throw Error(ErrorKind::io, "external data file '" + full.string() + "' does not exist",
                Error::kNoOffset, "external_data");
  }
  if (!std::filesystem::is_regular_file(status)) {
    throw unsafe(location, "is not a regular file");
  }
  if (strict) {
    // Symlinks anywhere on the way must still land inside the folder.
    const auto folder = std::filesystem::canonical(index.folder.empty() ? std::filesystem::path(".")
                                                                        : index.folder);
    const auto target = std::filesystem::canonical(full);
    const auto rel = target.lexically_relative(folder);
    if (rel.empty() || *rel.begin() == "..") {
      throw unsafe(location, "leads outside the model's folder (through a symlink)");
    }
    // A second hard link may live anywhere: its content is not known to belong to this model.
    struct stat info {};
    if (::stat(target.c_str(), &info) == 0 && info.st_nlink > 1) {
      throw unsafe(location, "has several hard links and may be a file from outside the folder");
    }
  }
  index.data_files.push_back({std::string(location), MappedFile::open(full, index.options.load)});
  return static_cast<std::uint32_t>(index.data_files.size() - 1);
}

}  // namespace onnxmap::detail
