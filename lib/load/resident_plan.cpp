#include "load/resident_plan.hpp"

#include <algorithm>
#include <cstdint>

#include "index/model_index.hpp"
#include "view/view_access.hpp"

namespace onnxmap::detail {

namespace {

struct Piece {
  const MappedFile* file = nullptr;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

// Pieces this close share one kernel count: the pages between are counted too, which is cheaper
// than another system call, and an index pass has touched most of them anyway.
constexpr std::uint64_t kJoinGap = std::uint64_t{64} << 10U;
// One count covers at most this much (where the kernel has no cachestat, mincore fills a vector
// of a byte per page: 64 Ki).
constexpr std::uint64_t kMaxWindow = std::uint64_t{256} << 20U;

// The payload of a whole-tensor item stored in a local mapped file; a piece without a file for
// anything else (rows of a tensor, other storage, a model opened by URL).
Piece piece_of(const LoadItem& item) noexcept {
  const ModelIndex* index = ViewAccess::index(item.tensor);
  const TensorRecord& r = index->tensors[ViewAccess::tensor(item.tensor)];
  const MappedFile* file = index->payload_file(r);
  if (item.row_end != kAllRows || file == nullptr || !file->is_mapped() ||
      index->fetcher != nullptr) {
    return {};
  }
  return {file, r.payload_offset, r.payload_offset + r.payload_length};
}

}  // namespace

// One pass over the plan, without a copy: a piece that starts in or just after the window
// grows it, any other closes it (one kernel count) and opens the next. Every piece lies in one
// window that is counted; a plan out of file order only makes more, smaller windows.
bool plan_resident(std::span<const LoadItem> plan) {
  Piece window{};
  bool counted_all = true;
  const auto close = [&] {
    if (window.file != nullptr && !window.file->resident(window.begin, window.end - window.begin)) {
      counted_all = false;
    }
  };
  for (const LoadItem& item : plan) {
    const Piece p = piece_of(item);
    if (p.file == nullptr) return false;
    if (p.begin == p.end) continue;
    if (p.file == window.file && p.begin >= window.begin && p.begin <= window.end + kJoinGap &&
        p.end - window.begin <= kMaxWindow) {
      window.end = std::max(window.end, p.end);
      continue;
    }
    close();
    if (!counted_all) return false;
    window = p;
  }
  close();
  return counted_all;
}

}  // namespace onnxmap::detail
