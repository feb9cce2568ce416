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

bool ResidentWindows::add(const MappedFile& file, std::uint64_t begin, std::uint64_t end) {
  if (&file == file_ && begin >= begin_ && begin <= end_ + kJoinGap && end - begin_ <= kMaxWindow) {
    end_ = std::max(end_, end);
    bytes_ += end - begin;
    return true;
  }
  const bool resident = close();
  file_ = &file;
  begin_ = begin;
  end_ = end;
  bytes_ = end - begin;
  return resident;
}

bool ResidentWindows::finish() {
  const bool resident = close();
  file_ = nullptr;
  return resident;
}

bool ResidentWindows::close() {
  if (file_ == nullptr) return true;
  counted_bytes_ += bytes_;
  if (!file_->resident(begin_, end_ - begin_)) return false;
  resident_bytes_ += bytes_;
  return true;
}

// One pass over the plan, without a copy; stops at the first window not all resident.
bool plan_resident(std::span<const LoadItem> plan) {
  ResidentWindows windows;
  for (const LoadItem& item : plan) {
    const Piece p = piece_of(item);
    if (p.file == nullptr) return false;
    if (p.begin != p.end && !windows.add(*p.file, p.begin, p.end)) return false;
  }
  return windows.finish();
}

}  // namespace onnxmap::detail
