#pragma once
// What a cached mirror holds, kept beside it as a small text file: the URL, and for the model
// file and each external data file its location, size, ETag, Last-Modified and fetched ranges.
// A record that cannot be read is treated as absent (the mirror is then fetched again).

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "remote/http_client.hpp"
#include "remote/range_set.hpp"

namespace onnxmap::remote {

struct CachedFile {
  std::string location;  // "" for the model file
  Validators validators;
  RangeSet held;
};

struct CacheRecord {
  std::string url;
  std::vector<CachedFile> files;  // the model file first
};

[[nodiscard]] std::optional<CacheRecord> read_record(const std::filesystem::path& path);
// Written to a temporary name, then renamed over `path`.
void write_record(const std::filesystem::path& path, const CacheRecord& record);

// The cache's folder for `url`: a stable hash of it under `cache_dir`.
[[nodiscard]] std::filesystem::path cache_folder(const std::filesystem::path& cache_dir,
                                                 std::string_view url);

}  // namespace onnxmap::remote
