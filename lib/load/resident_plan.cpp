#include "load/resident_plan.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "index/model_index.hpp"
#include "view/view_access.hpp"

namespace onnxmap::detail {

namespace {

struct Piece {
  const MappedFile* file;
  std::uint64_t begin;
  std::uint64_t end;
  friend bool operator<(const Piece& a, const Piece& b) {
    return std::tie(a.file, a.begin) < std::tie(b.file, b.begin);
  }
};

// Pieces this close share one mincore call: the pages between are checked too, which is cheaper
// than another system call, and an index pass has touched most of them anyway.
constexpr std::uint64_t kJoinGap = std::uint64_t{64} << 10U;
// One call covers at most this much, so its page vector stays small (64 Ki entries).
constexpr std::uint64_t kMaxWindow = std::uint64_t{256} << 20U;

// The plan's bytes as pieces of mapped files, in file order; empty when an item is not a whole
// tensor stored in a local mapped file.
std::vector<Piece> pieces_of(std::span<const LoadItem> plan) {
  std::vector<Piece> pieces;
  pieces.reserve(plan.size());
  for (const LoadItem& item : plan) {
    const ModelIndex* index = ViewAccess::index(item.tensor);
    const TensorRecord& r = index->tensors[ViewAccess::tensor(item.tensor)];
    const MappedFile* file = index->payload_file(r);
    if (item.row_end != kAllRows || file == nullptr || !file->is_mapped() ||
        index->fetcher != nullptr) {
      return {};
    }
    if (r.payload_length != 0) {
      pieces.push_back({file, r.payload_offset, r.payload_offset + r.payload_length});
    }
  }
  if (!std::is_sorted(pieces.begin(), pieces.end())) std::sort(pieces.begin(), pieces.end());
  return pieces;
}

}  // namespace

bool plan_resident(std::span<const LoadItem> plan) {
  const std::vector<Piece> pieces = pieces_of(plan);
  if (pieces.empty()) return plan.empty();
  for (std::size_t i = 0; i < pieces.size();) {
    Piece window = pieces[i++];
    while (i < pieces.size() && pieces[i].file == window.file &&
           pieces[i].begin <= window.end + kJoinGap && pieces[i].end - window.begin <= kMaxWindow) {
      window.end = std::max(window.end, pieces[i++].end);
    }
    if (!window.file->resident(window.begin, window.end - window.begin)) return false;
  }
  return true;
}

}  // namespace onnxmap::detail
