#include "load/buffer_pool.hpp"

#include <algorithm>
#include <utility>

namespace onnxmap::detail {

io::AlignedBuffer BufferPool::take(std::size_t size, std::uint64_t& fresh) {
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->size() >= size && (best == free_.end() || it->size() < best->size())) best = it;
  }
  io::AlignedBuffer buffer;
  if (best != free_.end()) {
    buffer = std::move(*best);
    free_.erase(best);
    free_bytes_ -= buffer.size();
  } else {
    // Room for the new buffer: free ones go first, largest first, as a load's tensors are
    // mostly of a few sizes and a large one is the rarest fit.
    while (!free_.empty() && out_bytes_ + free_bytes_ + size > limit_) {
      const auto largest =
          std::max_element(free_.begin(), free_.end(),
                           [](const auto& a, const auto& b) { return a.size() < b.size(); });
      free_bytes_ -= largest->size();
      free_.erase(largest);
    }
    fresh += size;
    buffer = io::AlignedBuffer(size);
  }
  out_bytes_ += buffer.size();
  return buffer;
}

void BufferPool::give(io::AlignedBuffer buffer) {
  if (buffer.size() == 0) return;
  out_bytes_ -= buffer.size();
  free_bytes_ += buffer.size();
  free_.push_back(std::move(buffer));
}

}  // namespace onnxmap::detail
