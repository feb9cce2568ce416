#pragma once
// How a file's bytes reach memory.

namespace onnxmap {

enum class LoadMode {
  map,   // mmap, advised for random access: only the pages touched are read
  read,  // read the whole file into memory
};

}  // namespace onnxmap
