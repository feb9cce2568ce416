#pragma once
// The loader's library buffers (load.hpp), reused: a buffer whose tensor has been handed over
// waits for the next tensor it can hold, so that a load faults in fresh memory only up to what
// is in flight at once, not once per tensor.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/file_reader.hpp"

namespace onnxmap::detail {

// Not thread-safe: the loader calls it under its lock.
class BufferPool {
 public:
  // Buffers handed out and kept for reuse together hold at most `limit` bytes, where the
  // buffers handed out allow it (a tensor larger than the limit is read alone).
  explicit BufferPool(std::uint64_t limit) : limit_(limit) {}

  // The smallest free buffer of at least `size` bytes, or a new one (its size counted in
  // `fresh`).
  [[nodiscard]] io::AlignedBuffer take(std::size_t size, std::uint64_t& fresh);
  // Takes `buffer` back, from take(), for reuse.
  void give(io::AlignedBuffer buffer);
  // A buffer of `size` bytes from take() that is not coming back (its caller kept it).
  void forget(std::size_t size) noexcept { out_bytes_ -= size; }

 private:
  std::uint64_t limit_;
  std::uint64_t out_bytes_ = 0;   // handed out by take(), not given back yet
  std::uint64_t free_bytes_ = 0;  // in free_
  std::vector<io::AlignedBuffer> free_;
};

}  // namespace onnxmap::detail
