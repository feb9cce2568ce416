#pragma once
// Where a model's bytes come from. A path is mapped (or read, as OpenOptions::mode says); a URL
// becomes a sparse local mirror whose metadata is fetched now and whose payloads are fetched on
// demand through the fetcher. The index pass and the views read `file` and ask the fetcher for
// payload ranges; nothing above this layer knows which of the two it was given.

#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "io/mapped_file.hpp"
#include "io/payload_fetcher.hpp"
#include "onnxmap/options.hpp"
#include "onnxmap/schema.hpp"

namespace onnxmap::detail {

struct ModelSource {
  MappedFile file;                          // the model file, or its mirror
  std::string display_name;                 // the path or URL, for error messages
  std::filesystem::path folder;             // external data locations resolve against it
  LoadMode data_mode = LoadMode::map;       // how the external data files are opened
  std::shared_ptr<PayloadFetcher> fetcher;  // fills a mirror; null for a local file
};

// Throws onnxmap::Error (invalid_argument) for options no open can honour (max_depth outside
// 1..kMaxDepthCeiling), before any file is opened or request made.
void check_options(const OpenOptions& options);

// The source of the model at `path` (a file, "-" for standard input, or an http(s) URL), whose
// root message is of kind `root`. Throws onnxmap::Error naming the path or URL.
[[nodiscard]] ModelSource open_source(const std::filesystem::path& path, const OpenOptions& options,
                                      schema::MessageKind root);
// A model held in memory (copied); external data resolves against `folder`.
[[nodiscard]] ModelSource source_from_bytes(std::span<const std::byte> bytes,
                                            const OpenOptions& options,
                                            std::filesystem::path folder);

}  // namespace onnxmap::detail
