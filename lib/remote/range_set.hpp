#pragma once
// The byte ranges a mirror holds: disjoint, merged when they touch.

#include <cstdint>
#include <iterator>
#include <map>
#include <vector>

#include "remote/http_client.hpp"

namespace onnxmap::remote {

class RangeSet {
 public:
  void add(std::uint64_t offset, std::uint64_t length) {
    if (length == 0) return;
    std::uint64_t begin = offset;
    std::uint64_t end = offset + length;
    auto it = ends_.upper_bound(begin);
    if (it != ends_.begin() && std::prev(it)->second >= begin) --it;
    while (it != ends_.end() && it->first <= end) {
      begin = std::min(begin, it->first);
      end = std::max(end, it->second);
      it = ends_.erase(it);
    }
    ends_.emplace(begin, end);
  }

  // The parts of [offset, offset + length) not held, in order.
  [[nodiscard]] std::vector<ByteRange> missing(std::uint64_t offset, std::uint64_t length) const {
    std::vector<ByteRange> out;
    std::uint64_t at = offset;
    const std::uint64_t end = offset + length;
    auto it = ends_.upper_bound(at);
    if (it != ends_.begin()) --it;
    for (; it != ends_.end() && at < end; ++it) {
      if (it->second <= at) continue;
      if (it->first >= end) break;
      if (it->first > at) out.push_back({at, it->first - at});
      at = std::max(at, it->second);
    }
    if (at < end) out.push_back({at, end - at});
    return out;
  }

  // begin -> end of each held range.
  [[nodiscard]] const std::map<std::uint64_t, std::uint64_t>& ranges() const noexcept {
    return ends_;
  }

 private:
  std::map<std::uint64_t, std::uint64_t> ends_;
};

}  // namespace onnxmap::remote
