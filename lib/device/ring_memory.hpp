#pragma once
// Host memory for the pinned ring: anonymous pages, 2 MiB aligned and advised as transparent
// huge pages (MADV_HUGEPAGE) where the kernel has them, so that an O_DIRECT read into a slot and
// the driver's pinning of it walk one page-table entry per 2 MiB instead of per 4 KiB. Where
// the kernel has no huge pages the advice fails and the memory is ordinary pages (same contract).

#include <cstddef>

namespace onnxmap::detail {

inline constexpr std::size_t kHugePage = std::size_t{2} << 20;

// `bytes` (rounded up to whole huge pages; at least one) of zeroed memory, 2 MiB aligned.
// Throws onnxmap::Error (device) when the memory cannot be mapped.
[[nodiscard]] void* map_ring_memory(std::size_t bytes);
// Unmaps what map_ring_memory(bytes) returned; null is a no-op.
void unmap_ring_memory(void* memory, std::size_t bytes) noexcept;

// Faults [memory, memory + bytes) in with one call (MADV_POPULATE_READ or _WRITE, Linux 5.14),
// rather than one fault per page when first touched; where the kernel lacks it, the pages
// fault in on first touch as usual (no error either way: it is a hint).
void populate(const void* memory, std::size_t bytes, bool for_writing) noexcept;

}  // namespace onnxmap::detail
