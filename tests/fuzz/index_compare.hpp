#pragma once
// The indexing pass must build the same index on any number of threads: the same tables, or the
// same error (kind, message, path and offset). For the fuzz targets and the unit tests.

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

#include "onnxmap/mapped_file.hpp"
#include "onnxmap/onnxmap.hpp"

namespace onnxmap::fuzz {

// Indexes `bytes` as `root` with Options::index_threads 1 and `threads` (other options as given)
// and returns the first difference between the two outcomes, or "" when there is none.
[[nodiscard]] std::string compare_thread_counts(std::span<const std::byte> bytes,
                                                const Options& options, schema::MessageKind root,
                                                unsigned threads,
                                                const std::filesystem::path& folder = {});

// The same for the model file at `path` (mapped as options.load says).
[[nodiscard]] std::string compare_thread_counts(const std::filesystem::path& path,
                                                const Options& options, unsigned threads);

}  // namespace onnxmap::fuzz
