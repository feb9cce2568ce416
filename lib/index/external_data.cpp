// External data files: one path policy for every reference (no absolute paths, no ".." escape,
// no symlink or hardlink leading outside the model's folder), each file mapped once.

#include <sys/stat.h>

#include <string>

#include "common/location.hpp"
#include "index/tensor_table.hpp"

namespace onnxmap::detail {

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
    throw Error(ErrorKind::io, "external data file '" + full.string() + "' does not exist",
                Error::kNoOffset, "external_data");
  }
  if (!std::filesystem::is_regular_file(status)) {
    throw unsafe_location(location, "is not a regular file");
  }
  if (strict) {
    // Symlinks anywhere on the way must still land inside the folder.
    const auto folder = std::filesystem::canonical(index.folder.empty() ? std::filesystem::path(".")
                                                                        : index.folder);
    const auto target = std::filesystem::canonical(full);
    const auto rel = target.lexically_relative(folder);
    if (rel.empty() || *rel.begin() == "..") {
      throw unsafe_location(location, "leads outside the model's folder (through a symlink)");
    }
    // A second hard link may live anywhere: its content is not known to belong to this model.
    struct stat info {};
    if (::stat(target.c_str(), &info) == 0 && info.st_nlink > 1) {
      throw unsafe_location(location,
                            "has several hard links and may be a file from outside the folder");
    }
  }
  index.data_files.push_back({std::string(location), MappedFile::open(full, index.options.mode)});
  return static_cast<std::uint32_t>(index.data_files.size() - 1);
}

}  // namespace onnxmap::detail
