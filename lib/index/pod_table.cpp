#include "index/pod_table.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

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

// A metadata-heavy model's index fills tens of MB; page by page, that is a fault per 4 KiB. Tables
// past kHugeFrom live in huge pages where the system allows them on request, and a table that
// outgrows kSmallBytes goes straight to kHugeFrom, in a fresh mapping: a huge page can only back
// a 2 MiB block that no small page was touched in, so a table that grew through it page by page
// would keep paying a fault per 4 KiB of its first 2 MiB. At most kHugeFrom - kSmallBytes of it
// may stay unused, and only tables that are already past kSmallBytes pay that.
constexpr std::size_t kSmallBytes = std::size_t{256} << 10U;
constexpr std::size_t kHugeFrom = std::size_t{2} << 20U;

std::size_t table_growth_bytes(std::size_t bytes) noexcept {
  return bytes > kSmallBytes && bytes < kHugeFrom ? kHugeFrom : bytes;
}

void* table_resize(void* data, std::size_t old_bytes, std::size_t new_bytes) {
  const std::size_t old_size = page_rounded(old_bytes);
  const std::size_t new_size = page_rounded(new_bytes);
  if (new_size == old_size) return data;
  if (new_size == 0) {
    table_free(data, old_bytes);
    return nullptr;
  }
  const bool to_huge = new_size >= kHugeFrom && old_size < kHugeFrom;
  void* moved = data == nullptr || to_huge ? ::mmap(nullptr, new_size, PROT_READ | PROT_WRITE,
                                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                           : ::mremap(data, old_size, new_size, MREMAP_MAYMOVE);
  if (moved == MAP_FAILED) throw std::bad_alloc();
  if (to_huge) {
    // Before the copy touches it, so that its first block is a huge page too.
    (void)::madvise(moved, new_size, MADV_HUGEPAGE);
    if (data != nullptr) {
      std::memcpy(moved, data, old_size);
      table_free(data, old_bytes);
    }
  }
  return moved;
}

void table_free(void* data, std::size_t bytes) noexcept {
  if (data != nullptr) ::munmap(data, page_rounded(bytes));
}

void* table_zeroed(std::size_t bytes) {
  // An empty table grown to the size is a fresh anonymous mapping, which the kernel zeroes.
  return table_resize(nullptr, 0, bytes);
}

#else

std::size_t table_growth_bytes(std::size_t bytes) noexcept {
  return bytes;
}

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

void* table_zeroed(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* data = std::calloc(1, bytes);
  if (data == nullptr) throw std::bad_alloc();
  return data;
}

#endif

}  // namespace onnxmap::detail
