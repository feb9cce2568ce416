#pragma once
// The indexing pass must build the same index on any number of threads: the same tables, or the
// same error (kind, message, path and offset). For the fuzz targets and the unit tests.

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

#include "io/mapped_file.hpp"
#include "onnxmap/onnxmap.hpp"

namespace onnxmap::fuzz {

// While one lives, the pass uses its pool on every level of every file, however small
// (detail::set_pool_everywhere_for_tests), so that the small inputs of tests and fuzzers reach
// the parallel code. OpenOptions::threads alone keeps small files and levels on one thread.
class PoolEverywhere {
 public:
  PoolEverywhere();
  ~PoolEverywhere();
  PoolEverywhere(const PoolEverywhere&) = delete;
  PoolEverywhere& operator=(const PoolEverywhere&) = delete;

 private:
  bool before_;
};

// Indexes `bytes` as `root` with OpenOptions::threads 1 and `threads` (other options as given,
// the pool on every level) and returns the first difference between the two outcomes, or "" when
// there is none.
[[nodiscard]] std::string compare_thread_counts(std::span<const std::byte> bytes,
                                                const OpenOptions& options, schema::MessageKind root,
                                                unsigned threads,
                                                const std::filesystem::path& folder = {});

// The same for the model file at `path` (mapped as options.mode says).
[[nodiscard]] std::string compare_thread_counts(const std::filesystem::path& path,
                                                const OpenOptions& options, unsigned threads);

}  // namespace onnxmap::fuzz
