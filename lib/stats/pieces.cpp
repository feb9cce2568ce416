// An item's elements as the loader's pieces hold them (pieces.hpp).

#include "stats/pieces.hpp"

#include <algorithm>

namespace onnxmap::detail {

std::uint64_t item_elements(const LoadItem& item) {
  if (item.row_end == kAllRows) return item.tensor.element_count();
  return (item.row_end - item.row_begin) * item.tensor.row_elements();
}

ElementRange whole_elements(std::uint64_t offset, std::uint64_t length, std::uint64_t bits,
                            std::uint64_t count) {
  const std::uint64_t first = (offset * 8 + bits - 1) / bits;
  const std::uint64_t last = std::min(count, (offset + length) * 8 / bits);
  return last > first ? ElementRange{first, last} : ElementRange{first, first};
}

std::vector<ElementRange> left_over(std::vector<ElementRange> done, std::uint64_t count) {
  std::sort(done.begin(), done.end(),
            [](const ElementRange& x, const ElementRange& y) { return x.first < y.first; });
  std::vector<ElementRange> out;
  std::uint64_t at = 0;
  for (const ElementRange& r : done) {
    if (r.first > at) out.push_back({at, r.first});
    at = std::max(at, r.last);
  }
  if (at < count) out.push_back({at, count});
  return out;
}

}  // namespace onnxmap::detail
