#include "source/model_source.hpp"

#include <string>

#include "onnxmap/error.hpp"
#include "remote/remote_model.hpp"

namespace onnxmap::detail {

void check_options(const OpenOptions& options) {
  if (options.max_depth < 1 || options.max_depth > kMaxDepthCeiling) {
    throw Error(ErrorKind::invalid_argument, "max_depth is " + std::to_string(options.max_depth) +
                                                 "; it must be 1.." +
                                                 std::to_string(kMaxDepthCeiling));
  }
}

ModelSource open_source(const std::filesystem::path& path, const OpenOptions& options,
                        schema::MessageKind root) {
  check_options(options);
  if (is_url(path.native())) {
    Mirror mirror = open_mirror(path.native(), options.remote, root, options.max_depth);
    // The mirror is filled behind the map, whatever the mode.
    // The model is named by its URL fit to show: no user information, no query.
    return {MappedFile::open(mirror.model_path, LoadMode::map), shown_url(path.native()),
            mirror.folder, LoadMode::map, std::move(mirror.fetcher)};
  }
  try {
    return {MappedFile::open(path, options.mode), path.string(), path.parent_path(), options.mode,
            nullptr};
  } catch (const Error& e) {
    throw e.in_context(path.string(), "");
  }
}

ModelSource source_from_bytes(std::span<const std::byte> bytes, const OpenOptions& options,
                              std::filesystem::path folder) {
  check_options(options);
  return {MappedFile::from_bytes(bytes), "<memory>", std::move(folder), options.mode, nullptr};
}

}  // namespace onnxmap::detail
