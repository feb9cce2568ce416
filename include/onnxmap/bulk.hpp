#pragma once
// Reading many tensors at once, for a runtime that will touch every weight anyway: page faults on
// a mapped file read 4 KiB at a time (slow on network filesystems), so these read the bytes in
// large sequential chunks, in file order, on a small thread pool.

#include <cstddef>
#include <span>

#include "onnxmap/export.hpp"
#include "onnxmap/tensor.hpp"

namespace onnxmap {

struct BulkOptions {
  unsigned threads = 4;
  std::size_t chunk_bytes = std::size_t{8} << 20U;  // one unit of work
};

// Brings the pages of `tensors` into memory (MADV_WILLNEED, then one touch per page). Afterwards
// bytes() of each costs no I/O until the kernel evicts the pages.
ONNXMAP_API void page_in(std::span<const Tensor> tensors, const BulkOptions& options = {});

// Copies each tensor's bytes (raw_data layout, typed fields decoded) into `buffers[i]`, whose
// size must equal tensors[i].byte_size(). Throws onnxmap::Error (invalid_argument) before copying
// anything when a size differs.
ONNXMAP_API void read_into(std::span<const Tensor> tensors,
                           std::span<const std::span<std::byte>> buffers,
                           const BulkOptions& options = {});

}  // namespace onnxmap
