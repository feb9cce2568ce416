#pragma once
// Reading a model's bytes safely while its file may shrink. The views onnxmap hands out
// (Tensor::bytes(), slice_rows(), a loaded tensor's bytes in map mode) are plain memory: a file
// truncated while it is mapped raises SIGBUS on the next touch of a page past its new end, which
// kills the process. onnxmap's own copies, counts and decodes of those bytes (the loaders, data(),
// tensor_stats, decode_values, compare_values, unpack_sub_byte, check) turn such a fault into an
// onnxmap::Error; copy_bytes gives a caller the same for its own copies.
// Threads: each call reads only its arguments; any number of threads may call them at once, and a
// fault is turned into an error on the thread whose copy met it.

#include <cstddef>
#include <span>

#include "onnxmap/export.hpp"

namespace onnxmap {

// Copies `from` into `to`. A fault reading `from` (a mapped file that shrank while open, or an
// I/O error under the map) is an onnxmap::Error (io) naming the file, the byte and the file's
// size now, not a signal; `to` then holds some of the bytes. Throws onnxmap::Error
// (invalid_argument) when the sizes differ. Any number of threads may call it at once.
ONNXMAP_API void copy_bytes(std::span<const std::byte> from, std::span<std::byte> to);

}  // namespace onnxmap
