// Host memory for the pinned ring (ring_memory.hpp).

#include "device/ring_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "onnxmap/error.hpp"

namespace onnxmap::detail {

namespace {

std::size_t rounded(std::size_t bytes) {
  return bytes == 0 ? kHugePage : (bytes + kHugePage - 1) / kHugePage * kHugePage;
}

}  // namespace

// One huge page more is mapped than asked and the unaligned head and tail are unmapped, so the
// result starts on a 2 MiB boundary (mmap promises only 4 KiB).
void* map_ring_memory(std::size_t bytes) {
  const std::size_t size = rounded(bytes);
  void* raw =
      mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    throw Error(ErrorKind::device, "cannot map " + std::to_string(size) +
                                       " bytes for the pinned ring: " + std::strerror(errno));
  }
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) munmap(raw, aligned - start);
  const std::uintptr_t end = start + size + kHugePage;
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
  void* memory = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  (void)madvise(memory, size, MADV_HUGEPAGE);  // advice: ordinary pages where refused
#endif
  return memory;
}

void unmap_ring_memory(void* memory, std::size_t bytes) noexcept {
  if (memory != nullptr) munmap(memory, rounded(bytes));
}

void populate(const void* memory, std::size_t bytes, bool for_writing) noexcept {
#if defined(MADV_POPULATE_READ) && defined(MADV_POPULATE_WRITE)
  // madvise wants a page-aligned start: widen to the page holding `memory`.
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto start = reinterpret_cast<std::uintptr_t>(memory);
  const std::uintptr_t aligned = start / page * page;
  (void)madvise(reinterpret_cast<void*>(aligned), bytes + (start - aligned),
                for_writing ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
#else
  (void)memory;
  (void)bytes;
  (void)for_writing;
#endif
}

}  // namespace onnxmap::detail
