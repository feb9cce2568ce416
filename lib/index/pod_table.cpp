#include "index/pod_table.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

// Under AddressSanitizer and ThreadSanitizer the tables live in malloc'd memory: ASan sees
// overflows there, and TSan does not follow mremap (memory it moves keeps the old owner's
// history, and another thread's table mapped there later reads as a race).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ONNXMAP_TABLES_IN_MAPPINGS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ONNXMAP_TABLES_IN_MAPPINGS 0
#endif
#endif
#if !defined(ONNXMAP_TABLES_IN_MAPPINGS) && defined(__linux__)
#define ONNXMAP_TABLES_IN_MAPPINGS 1
#endif
#if !defined(ONNXMAP_TABLES_IN_MAPPINGS)
#define ONNXMAP_TABLES_IN_MAPPINGS 0
#endif

#if ONNXMAP_TABLES_IN_MAPPINGS
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace onnxmap::detail {

#if ONNXMAP_TABLES_IN_MAPPINGS

namespace {

std::size_t page_rounded(std::size_t bytes) {
  static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

void* table_resize(void* data, std::size_t old_bytes, std::size_t new_bytes) {
  const std::size_t old_size = page_rounded(old_bytes);
  const std::size_t new_size = page_rounded(new_bytes);
  if (new_size == old_size) return data;
  if (new_size == 0) {
    table_free(data, old_bytes);
    return nullptr;
  }
  void* moved = data == nullptr ? ::mmap(nullptr, new_size, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                : ::mremap(data, old_size, new_size, MREMAP_MAYMOVE);
  if (moved == MAP_FAILED) throw std::bad_alloc();
  // Large tables in huge pages where the system allows them on request: a metadata-heavy
  // model's index fills tens of MB, a page fault per 4 KiB of it otherwise.
  constexpr std::size_t kHugeFrom = std::size_t{4} << 20U;
  if (new_size >= kHugeFrom && old_size < kHugeFrom)
    (void)::madvise(moved, new_size, MADV_HUGEPAGE);
  return moved;
}

void table_free(void* data, std::size_t bytes) noexcept {
  if (data != nullptr) ::munmap(data, page_rounded(bytes));
}

#else

void* table_resize(void* data, std::size_t /*old_bytes*/, std::size_t new_bytes) {
  if (new_bytes == 0) {
    std::free(data);
    return nullptr;
  }
  void* moved = std::realloc(data, new_bytes);
  if (moved == nullptr) throw std::bad_alloc();
  return moved;
}

void table_free(void* data, std::size_t /*bytes*/) noexcept {
  std::free(data);
}

#endif

}  // namespace onnxmap::detail
