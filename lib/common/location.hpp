#pragma once
// The one rule for an external data location as text, for the reader and the writer alike: it
// names a file inside the model's folder, so it is not empty, holds no NUL, is relative (no root
// name, no leading '/') and has no ".." part. Symlinks and hard links are the reader's to check
// on the file system (belongs_to_folder: where a symlink may lead).

#include <filesystem>
#include <string>
#include <string_view>

#include "onnxmap/error.hpp"

namespace onnxmap::detail {

// Why `location` may name a file outside the model's folder, or nullptr when it may not.
[[nodiscard]] inline const char* location_text_problem(std::string_view location) {
  if (location.empty()) return "is empty";
  if (location.find('\0') != std::string_view::npos) return "contains NUL";
  const std::filesystem::path path{std::string(location)};
  if (path.is_absolute() || path.has_root_name() || path.has_root_directory()) {
    return "is absolute";
  }
  for (const auto& part : path) {
    if (part == "..") return "climbs out of the model's folder with '..'";
  }
  return nullptr;
}

// Whether `path` lies below `root` (both absolute and normal, as canonical() gives them).
[[nodiscard]] inline bool lies_within(const std::filesystem::path& root,
                                      const std::filesystem::path& path) {
  const std::filesystem::path relative = path.lexically_relative(root);
  return !relative.empty() && *relative.begin() != "..";
}

// Whether a data file whose canonical path is `target` belongs to a model in the canonical
// `folder`: it lies in the folder, or the folder is in a Hugging Face Hub cache snapshot
// (models--ORG--NAME/snapshots/REVISION/...) and the file in that repository's blobs/ folder,
// where the Hub keeps what the snapshot's symlinks point at (its files are all symlinks).
[[nodiscard]] inline bool belongs_to_folder(const std::filesystem::path& folder,
                                            const std::filesystem::path& target) {
  if (lies_within(folder, target)) return true;
  for (std::filesystem::path at = folder; at.has_relative_path(); at = at.parent_path()) {
    const std::filesystem::path snapshots = at.parent_path();
    const std::filesystem::path repo = snapshots.parent_path();
    if (snapshots.filename() == "snapshots" && repo.filename().string().starts_with("models--")) {
      return lies_within(repo / "blobs", target);
    }
  }
  return false;
}

// The reader's error for a location it refuses (`why` completes "external data location 'x' ").
[[nodiscard]] inline Error unsafe_location(std::string_view location, std::string_view why) {
  return {ErrorKind::unsafe_path,
          "external data location '" + std::string(location) + "' " + std::string(why),
          Error::kNoOffset, "external_data"};
}

}  // namespace onnxmap::detail
