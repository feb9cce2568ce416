#pragma once
// Reading a model's metadata safely while its file may shrink. Names, attributes, doc strings,
// nodes and the rest of a model's metadata are read through the map, like its tensors' bytes
// (bytes.hpp): a file truncated while it is mapped raises SIGBUS on the next touch of a page past
// its new end. guard_reads runs a piece of work (a tool's command, a server's request, a
// binding's call) so that such a fault there is an onnxmap::Error instead. onnxmap's own tools,
// its viewer and its Python binding run their work this way. The C++ look-ups (Model::find_tensor,
// tensor, tensors) and the views' getters are not guarded themselves: a guard costs a look-up two
// to three times its time.
// Threads: any number of threads may run guard_reads at once, and guards nest; a fault is
// reported by the guards of the thread that met it, and by any guard running meanwhile once the
// file is found shorter (it may have read the stand-in zeros). reads_intact is this thread's.

#include <functional>

#include "onnxmap/export.hpp"

namespace onnxmap {

// Runs body(). A read past the end of a file onnxmap maps (a model or data file that shrank
// while open), made by this thread inside body, reads a page of zeros in place of the lost one,
// so body runs on (its destructors run, its locks are released); when body ends, the file is
// mapped again under those pages and guard_reads throws onnxmap::Error (io) naming the file, the
// byte and the file's size now, in place of anything body threw. Drop what body made: it may
// hold those zeros, and so may anything body wrote meanwhile (print after the guard). The same
// error when another thread's guard_reads met such a fault meanwhile and a mapped file is now
// shorter than at open (body may have read the zeros). Bytes past the end but on the file's last
// page read as zeros without any fault (the kernel's rule): no guard sees those. Faults of other
// kinds, or in memory onnxmap does not map, kill as before; onnxmap's guarded copies inside body
// (bytes.hpp) still throw at once. A plain view read outside any guard while another thread's
// guard stands in for its page reads zeros until that guard ends. The cost: a few atomic
// operations, no system call; guard a piece of work, not a byte. Guards nest; any number of
// threads may run them at once.
ONNXMAP_API void guard_reads(const std::function<void()>& body);

// Whether the guard_reads guards this thread is in have met no such fault so far, and no other
// thread's guard has met one since they began (true outside any). Work that keeps what it makes
// beyond its guard (a cache) keeps it only while this holds: the guard's error reaches the caller,
// but a cache filled from zeros would outlive it.
[[nodiscard]] ONNXMAP_API bool reads_intact() noexcept;

}  // namespace onnxmap
