#pragma once
// Faults in mapped bytes turned into errors on onnxmap's own copies. A file truncated while it
// is mapped raises SIGBUS on the next touch of a page past its new end; a kernel run through
// guard_faults (a copy, a count, a decode over a chunk of bytes) is left by a jump back to its
// guard point instead, and the guard throws onnxmap::Error (io) naming the file and its size
// now; code run through guard_reads (a tool's verb, a viewer's request, a binding that decodes
// metadata) reads zeros in place of the lost page and the guard throws that error at its end.
// One SIGBUS handler, installed at the first guarded call, serves every thread; a fault
// outside a guard, or in bytes the guard does not cover, goes to the handler that was installed
// before it (the default one: the process dies as before).

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>

#include "onnxmap/error.hpp"

namespace onnxmap::detail {

// Runs kernel(context) with a SIGBUS at an address in `first` or `second` (either may be
// empty) on this thread turned into a return: false, with *fault the address; true when the
// kernel ran to its end. Guards nest: a fault goes to the innermost guard covering its address.
[[nodiscard]] bool run_guarded(std::span<const std::byte> first, std::span<const std::byte> second,
                               void (*kernel)(void*), void* context, const void** fault);

// The error for a fault at `address`: names the mapped file holding it, the byte, and the
// file's size now (an fstat after the fault), or says that no mapped file of onnxmap holds it.
[[nodiscard]] Error mapped_fault_error(const void* address);

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

// Runs body() with a read past the end of a mapped file of onnxmap (one that shrank while open)
// answered by a page of zeros in place of the lost one, so that body runs on without a jump (it
// may allocate, lock and throw: its destructors run). When body ends, the file is mapped again
// under those pages and the first such fault is thrown as mapped_fault_error, in place of what
// body threw; body's results must then be dropped. The same when another thread's guard_reads
// stood in for pages meanwhile and a mapped file is now shorter than its map (body may have read
// those zeros). Faults in the bytes of a guard_faults inside body still jump to it; other faults
// (a memory error, a map of someone else) go on to the handler before ours. The cost: a slot
// claimed, no system call; guard a call of a tool, a request, a binding, not a page. Another
// thread reading a lost page plainly (a caller's view) while body runs reads zeros, not SIGBUS.
void guard_reads(const std::function<void()>& body);
// Whether this thread's guard_reads guards have met no fault so far, and no other thread's has
// since they began (true outside any).
[[nodiscard]] bool reads_intact() noexcept;

// The mapped files a fault may name: MappedFile registers each map when it is made and
// unregisters it before unmapping it. `fd` is the open file behind the map, which must stay open
// while the map is registered (fstat gives its size after a fault); `size` is the map's.
void register_mapping(std::span<const std::byte> map, const std::filesystem::path& path, int fd);
void unregister_mapping(const std::byte* begin) noexcept;

}  // namespace onnxmap::detail
