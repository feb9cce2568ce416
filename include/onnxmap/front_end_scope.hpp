#pragma once
// Reading a model's metadata safely while its file may shrink. Names, attributes, doc strings,
// nodes and the rest of a model's metadata are read through the map, like its tensors' bytes
// (bytes.hpp): a file truncated while it is mapped raises SIGBUS on the next touch of a page past
// its new end. A front end (onnxmap's CLI, its viewer, its Python binding; a server of yours)
// that wants such a fault in the work of a thread to be an onnxmap::Error instead holds a
// FrontEndScope on that thread while it works: the library then checks the pages of the mapped
// bytes it is about to decode (the open's pass, a view's getters, the name look-ups) and throws
// onnxmap::Error (io) naming the file, the byte and the file's size now, before it reads them.
//
// Nothing is ever read in place of a lost page. A thread that holds a plain view (a string_view,
// a tensor's bytes) reads the model's bytes while the file is whole and meets the signal it would
// have met without onnxmap after a cut, whatever other threads and their scopes do; a cut between
// the check and the read (microseconds) does the same. Bytes a caller reads itself from a view
// (a tensor's payload) are not checked: copy them with copy_bytes (bytes.hpp) to get the error.
// Outside a scope the checks cost one relaxed load of a process-wide counter; inside, one touch
// of a byte per page decoded.
//
// Threads: a scope marks only the thread that holds it; scopes nest, and any number of threads
// may hold them at once.

#include "onnxmap/export.hpp"

namespace onnxmap {

// Marks this thread as reading for a front end from construction to destruction (a guard
// object: make it on the thread that does the work, at the start of a command, a request or a
// binding's call, and let it end there).
class ONNXMAP_API FrontEndScope {
 public:
  FrontEndScope() noexcept;
  ~FrontEndScope();
  FrontEndScope(const FrontEndScope&) = delete;
  FrontEndScope& operator=(const FrontEndScope&) = delete;
  FrontEndScope(FrontEndScope&&) = delete;
  FrontEndScope& operator=(FrontEndScope&&) = delete;
};

}  // namespace onnxmap
