#pragma once
// The viewer's tensor table: pages of every tensor sorted and filtered on the server (a model of
// 180,000 tensors scrolls a page at a time), and the bytes grouped by name for the treemap.
// Sort orders and filter results are computed once and kept: a page after the first costs its
// rows only. Safe to call from several threads.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "onnxmap/onnxmap.hpp"
#include "shared/model_json.hpp"

namespace onnxmap::cli::viewer {

struct TensorPageQuery {
  std::string sort = "index";  // index, name, bytes, dtype, offset or module
  bool descending = false;
  std::string filter;  // a glob on the name; empty: every tensor
  std::uint64_t offset = 0;
  std::uint64_t limit = 100;
};

class TensorList {
 public:
  explicit TensorList(Model model);

  // {"total", "matched", "offset", "rows": [the rows of ls --json (the first reader's module
  // and logical form included) with "index" and "elements"]}.
  // Throws std::invalid_argument for an unknown sort key.
  [[nodiscard]] nlohmann::json page(const TensorPageQuery& query);
  // Computes the order `sort` names now, so that its first page does not wait for it.
  void sort_ahead(const std::string& sort) { (void)order(sort); }
  // The bytes of the tensors matching `filter` whose name starts with `prefix`, grouped by the
  // next segment of their names (up to and including the next '.' or '/').
  [[nodiscard]] nlohmann::json treemap(const std::string& prefix, const std::string& filter);

 private:
  using Indices = std::vector<std::uint32_t>;
  // Every tensor's index in `sort`'s ascending order (stable: ties keep the index order).
  std::shared_ptr<const Indices> order(const std::string& sort);
  // One byte per tensor: whether its name matches `filter`.
  std::shared_ptr<const std::vector<std::uint8_t>> matches(const std::string& filter);
  // The main graph's first readers, found on the first call (a pass over its nodes).
  const FirstReaders& readers();
  // One row of the table: `ls --json`'s, with the tensor's index and element count.
  nlohmann::json row(std::uint32_t index);

  Model model_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const Indices>> orders_;
  std::map<std::string, std::shared_ptr<const std::vector<std::uint8_t>>> filters_;  // a few kept
  std::once_flag readers_made_;
  std::optional<FirstReaders> readers_;
};
// The segment of `name` after its first `prefix_size` bytes, up to and including the next '.'
// or '/' (or the rest): the unit the treemap and the graph fold names by.
[[nodiscard]] std::string_view next_segment(std::string_view name, std::size_t prefix_size);

}  // namespace onnxmap::cli::viewer
