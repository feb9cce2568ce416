#pragma once
// The one mechanism that turns a fault in mapped bytes into an error. A file truncated while it
// is mapped raises SIGBUS on the next touch of a page past its new end (an I/O error under the
// map does too). A kernel run through guard_faults (a copy, a count, a decode, a touch of one
// byte per page) is left by a jump back to its guard point instead, and the guard throws
// onnxmap::Error (io) naming the file, the byte and its size now (mapped_files.hpp). Nothing is
// ever put in place of a lost page: a read outside a guard meets the signal it would have met
// without onnxmap. One SIGBUS handler, installed at the first guarded call, serves every thread;
// a fault outside a guard, or in bytes the guard does not cover, goes to the handler that was
// installed before it (the default one: the process dies as before).
//
// Front ends (the CLI, the viewer, the Python binding) do not guard their own work: inside a
// FrontEndScope (onnxmap/front_end_scope.hpp) the library checks the mapped bytes it is about to
// decode with such a kernel first (read_check.hpp).

#include <cstddef>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>

#include "io/mapped_files.hpp"

namespace onnxmap::detail {

// Runs kernel(context) with a SIGBUS at an address in `first` or `second` (either may be
// empty) on this thread turned into a return: false, with *fault the address; true when the
// kernel ran to its end. Guards nest: a fault goes to the innermost guard covering its address.
// Any number of threads may guard at once (the table of guard points grows; no fixed limit).
[[nodiscard]] bool run_guarded(std::span<const std::byte> first, std::span<const std::byte> second,
                               void (*kernel)(void*), void* context, const void** fault);

// Runs kernel() with a fault reading `first` or `second` turned into mapped_fault_error. The
// contract that makes the jump safe: `kernel` is a plain loop over the bytes (copy, count, compare,
// decode into memory the caller holds) that creates no object with a destructor, takes no lock,
// allocates nothing and throws nothing (it must be noexcept), because a fault leaves it by a
// jump that runs no destructor. Its state lives in the caller's frame, outside the guard. The
// cost is one sigsetjmp (no system call): guard a chunk or a whole tensor, not a page.
template <class Kernel>
void guard_faults(std::span<const std::byte> first, std::span<const std::byte> second,
                  Kernel&& kernel) {
  static_assert(std::is_nothrow_invocable_v<Kernel&>, "a guarded kernel must be noexcept");
  using Plain = std::remove_reference_t<Kernel>;
  const void* fault = nullptr;
  void* context = const_cast<void*>(static_cast<const void*>(std::addressof(kernel)));
  if (!run_guarded(
          first, second, [](void* k) { (*static_cast<Plain*>(k))(); }, context, &fault)) {
    throw mapped_fault_error(fault);
  }
}
// The same over one run of bytes.
template <class Kernel>
void guard_faults(std::span<const std::byte> bytes, Kernel&& kernel) {
  guard_faults(bytes, {}, std::forward<Kernel>(kernel));
}

}  // namespace onnxmap::detail
