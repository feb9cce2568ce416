#pragma once
// The device's limit for cold_load_bench: plain reads of whole files, no loader, in 16 MiB
// requests. Each returns the bytes it read.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace onnxmap::bench {

using Files = std::vector<std::filesystem::path>;

inline constexpr std::size_t kRawChunk = std::size_t{16} << 20U;

// Which pages back a reader's buffers: 4 KiB ones, or transparent huge pages where the kernel
// allows (MADV_HUGEPAGE), as the loader's.
enum class Pages : std::uint8_t { small, huge };

// Buffered preads on `threads` threads taking chunks in turn, one reused buffer each.
std::uint64_t pread_loop(const Files& files, unsigned threads);
// The same with O_DIRECT into aligned buffers: the loader's direct mode without the loader.
std::uint64_t direct_pool(const Files& files, unsigned threads, Pages pages);
// O_DIRECT reads through one io_uring with `depth` requests in flight, one reused buffer (of
// huge pages) each. nullopt where io_uring is not available (not built, or refused).
std::optional<std::uint64_t> direct_uring(const Files& files, unsigned depth);

// What fio says it read, and in how long, reading each file with O_DIRECT in 16 MiB blocks at
// queue depth 8 (libaio). nullopt where fio is missing or fails.
struct FioFigure {
  std::uint64_t bytes = 0;
  double seconds = 0;
};
std::optional<FioFigure> fio_read(const Files& files);

}  // namespace onnxmap::bench
