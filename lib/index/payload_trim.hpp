#pragma once
// Keeps the memory the indexing pass makes resident down to the metadata it reads. Since Linux
// 6.18 a page fault maps the whole page-cache folio around the faulting byte when it fits the
// mapping, and folios reach megabytes for files cached by large writes or readahead: touching
// one tensor's header could make a megabyte of the payloads beside it resident. The pass never
// reads payloads, so once it has passed a large one it unmaps the whole pages inside it (they
// stay in the page cache).
//
// An unmapping waits for the next read that may fault, which may map the payload's tail. Reads
// the caller knows cannot fault (a tensor's first page, touched when its parent was scanned) do
// not trigger one, so the tensor pass of a common file makes no system call at all.

#include <algorithm>
#include <cstdint>

#include "common/span.hpp"
#include "io/mapped_file.hpp"

namespace onnxmap::detail {

class PayloadTrimmer {
 public:
  explicit PayloadTrimmer(const MappedFile& file) : file_(file.is_mapped() ? &file : nullptr) {}

  // A field was read: its tag at `at`, its payload `payload` (empty for scalars). `known_mapped`
  // says the page holding `at` was touched before, so this read did not fault.
  void passed(std::uint64_t at, const ByteRange& payload, bool known_mapped) noexcept {
    if (!known_mapped) reach_ = at + kMaxFolio;
    // The common case, inlined: nothing waits and this payload is small.
    if (pending_.length == 0 && payload.length < kMinLength) return;
    if (file_ == nullptr) return;
    if (!known_mapped) release_pending();
    if (payload.length >= kMinLength) {
      // Replaced unreleased: no fault since it was set, unless an earlier one reached into it.
      if (pending_dirty_) release_pending();
      pending_ = payload;
      pending_dirty_ = payload.offset < reach_;
    }
  }
  void finish() noexcept {
    if (file_ != nullptr) release_pending();
  }

 private:
  // Smaller payloads are not worth a system call (fault-around alone maps 64 KiB).
  static constexpr std::uint64_t kMinLength = std::uint64_t{64} << 10U;
  // The largest folio a fault maps with page-table entries: one page table's span, 2 MiB.
  static constexpr std::uint64_t kMaxFolio = std::uint64_t{2} << 20U;
  // Payloads up to this size are unmapped in one call: walking the page tables of their interior
  // blocks costs less than a second system call (issue 55: two calls per payload made the open
  // of a 1.9 GB model with 147 tensors 1.2-1.3x slower). Larger ones are unmapped at both ends.
  static constexpr std::uint64_t kOneCallLength = std::uint64_t{256} << 20U;

  // Only the payload's first and last 2 MiB block can hold pages a fault mapped: the kernel maps
  // around a fault within the fault's own page table (one aligned 2 MiB block of the address
  // space), and the pass faults only outside payloads. Unmapping just those parts leaves the
  // page tables of the blocks between unwalked: on the 263 GiB file, walking them was a tenth
  // of the open (its payloads of 896 MiB). A payload of at most kOneCallLength is one call.
  void release_pending() noexcept {
    if (pending_.length != 0) {
      const auto base = reinterpret_cast<std::uintptr_t>(file_->bytes().data());
      const std::uint64_t begin = base + pending_.offset;
      const std::uint64_t end = begin + pending_.length;
      const std::uint64_t head_end = std::min(end, (begin + kMaxFolio - 1) & ~(kMaxFolio - 1));
      const std::uint64_t tail_begin = std::max(begin, end & ~(kMaxFolio - 1));
      if (tail_begin <= head_end || pending_.length <= kOneCallLength) {
        file_->release_interior(pending_.offset, pending_.length);
      } else {
        file_->release_interior(pending_.offset, head_end - begin);
        file_->release_interior(tail_begin - base, end - tail_begin);
      }
    }
    pending_ = {};
    pending_dirty_ = false;
  }

  const MappedFile* file_;
  ByteRange pending_{};
  bool pending_dirty_ = false;
  std::uint64_t reach_ = 0;  // below this, an earlier fault may have mapped pages
};

}  // namespace onnxmap::detail
