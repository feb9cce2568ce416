#pragma once
// A range of bytes: where it starts and how many bytes it holds. The library's one byte-range
// type, public because Tensor::row_range returns one; inside the library it also names ranges
// of the model file and of external data files.
//
// Threads: a plain value.

#include <cstdint>

namespace onnxmap {

struct ByteRange {
  std::uint64_t offset = 0;  // from the start of what it is a range of (a file, a payload)
  std::uint64_t length = 0;
};

}  // namespace onnxmap
