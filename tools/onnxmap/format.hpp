#pragma once
// Output helpers shared by the verbs: aligned tables, human-readable sizes, dims.

#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <vector>

namespace onnxmap::cli {

// "1.5 GiB", "512 B".
[[nodiscard]] std::string human_bytes(std::uint64_t bytes);
// "[32, 4096]"; "[]" for a scalar.
[[nodiscard]] std::string format_dims(std::span<const std::int64_t> dims);

// Columns padded to their widest cell; the last column is not padded.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace onnxmap::cli
