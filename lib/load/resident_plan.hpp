#pragma once
// Whether a prefetch has anything to do: a plan whose bytes all lie in the page cache already
// needs no read, and finding that out must cost far less than reading the bytes through the map
// (the prefetch pool is never to make a warm read slower than one thread reading alone).

#include <cstdint>
#include <span>

#include "io/mapped_file.hpp"
#include "onnxmap/load.hpp"

namespace onnxmap::detail {

// True when every item is a whole tensor stored in a local mapped file (raw or external data)
// and every page of every item is in the page cache. False means "not known to be resident":
// the caller plans the reads, and gets whatever errors planning gives.
[[nodiscard]] bool plan_resident(std::span<const LoadItem> plan);

// Counts the page cache over pieces of files given in file order, one kernel count (cachestat,
// or mincore) per window of nearby pieces rather than one per piece: pieces closer than
// kJoinGap share a window (the pages between are counted too, which is cheaper than another
// system call), and a window spans at most kMaxWindow. Pieces out of order only make more,
// smaller windows.
class ResidentWindows {
 public:
  static constexpr std::uint64_t kJoinGap = std::uint64_t{64} << 10U;
  // Where the kernel has no cachestat, mincore fills a vector of a byte per page: 64 Ki.
  static constexpr std::uint64_t kMaxWindow = std::uint64_t{256} << 20U;

  // Adds [begin, end) of `file`. False when it closed a window that was not all resident.
  bool add(const MappedFile& file, std::uint64_t begin, std::uint64_t end);
  // Closes the last window. False when it was not all resident.
  bool finish();
  // The bytes of the pieces in windows found all resident, of those in closed windows.
  [[nodiscard]] std::uint64_t resident_bytes() const noexcept { return resident_bytes_; }
  [[nodiscard]] std::uint64_t counted_bytes() const noexcept { return counted_bytes_; }

 private:
  bool close();

  const MappedFile* file_ = nullptr;
  std::uint64_t begin_ = 0;
  std::uint64_t end_ = 0;
  std::uint64_t bytes_ = 0;  // of the pieces in the open window
  std::uint64_t resident_bytes_ = 0;
  std::uint64_t counted_bytes_ = 0;
};

}  // namespace onnxmap::detail
